"""Writing rgb frames as a GIF (with Pillow) or an MP4 (with an ffmpeg executable: the one on
PATH, else the one the imageio-ffmpeg package ships). The `video` extra installs both, and
pygame, which gymnasium's classic-control envs render with; a missing one is a `MissingExtra`
(`trainer.cli.extras`) naming it.

Frames are encoded as they arrive (GIF frames are reduced to a palette at once, MP4 frames go
straight into ffmpeg's stdin), so a long episode does not pile up full-size frames. The file is
written under a temporary name and renamed at the end: no half-written video is left behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import IO

import numpy as np

from trainer.cli.extras import VIDEO, MissingExtra, require

FORMATS = (".gif", ".mp4")
#: Seconds ffmpeg may take to finish the file after the last frame.
FFMPEG_FINISH_TIMEOUT_S = 120


# Internal to the command line: it prints the message and exits (not raised by the API).
class VideoError(Exception):
    """The video cannot be written: says why and what to install or change."""


def ffmpeg_executable() -> str | None:
    found = shutil.which("ffmpeg")
    if found:
        return found
    try:
        import imageio_ffmpeg
    except ImportError:
        return None
    try:
        return imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError:
        return None


def check_video_path(path: str) -> str:
    """Raises VideoError unless `path` has a known suffix and its folder exists."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FORMATS:
        raise VideoError(f"{path!r}: give a file ending in {' or '.join(FORMATS)}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise VideoError(f"{path!r}: the folder {parent} does not exist")
    return path


def check_video_encoder(path: str) -> None:
    """Raises MissingExtra unless the encoder of `path`'s format is installed: Pillow for a
    GIF, an ffmpeg executable for an MP4."""
    what = f"--video {path}"
    if path.lower().endswith(".gif"):
        require("PIL.Image", VIDEO, what, library="Pillow")
    elif ffmpeg_executable() is None:
        raise MissingExtra(what, "ffmpeg (on PATH, or the imageio-ffmpeg package)", VIDEO)


class VideoWriter:
    """`add(frame)` for each (height, width, 3) uint8 frame, then `close()`."""

    def __init__(self, path: str, fps: float):
        self.path = path
        self.fps = fps
        self.num_frames = 0
        self._temporary = f"{path}.{os.getpid()}.tmp{os.path.splitext(path)[1]}"
        self._gif_frames: list = []
        self._ffmpeg: subprocess.Popen | None = None
        self._size: tuple[int, int] | None = None

    def add(self, frame: np.ndarray) -> None:
        frame = np.ascontiguousarray(frame, dtype=np.uint8)
        if frame.ndim != 3 or frame.shape[2] != 3:
            raise VideoError(
                f"the env rendered a frame of shape {frame.shape}; an rgb frame is "
                "(height, width, 3)"
            )
        if self._size is None:
            self._size = frame.shape[:2]
        elif frame.shape[:2] != self._size:
            raise VideoError(f"the frame size changed from {self._size} to {frame.shape[:2]}")
        if self.path.lower().endswith(".gif"):
            import PIL.Image

            self._gif_frames.append(
                PIL.Image.fromarray(frame).convert("P", palette=PIL.Image.Palette.ADAPTIVE)
            )
        else:
            if self._ffmpeg is None:
                self._ffmpeg = self._start_ffmpeg(*self._size)
            try:
                _input_of(self._ffmpeg).write(frame.tobytes())
            except BrokenPipeError:
                raise VideoError(f"ffmpeg stopped: {_errors_of(self._ffmpeg)}") from None
        self.num_frames += 1

    def _start_ffmpeg(self, height: int, width: int) -> subprocess.Popen:
        executable = ffmpeg_executable()
        if executable is None:  # checked before the writer is made; gone since
            raise MissingExtra(f"--video {self.path}", "ffmpeg", VIDEO)
        command = [
            executable,
            "-y",
            "-loglevel",
            "error",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-s",
            f"{width}x{height}",
            "-r",
            f"{self.fps:g}",
            "-i",
            "-",
            # H.264 in yuv420p wants even sizes; players expect yuv420p.
            "-vf",
            "pad=ceil(iw/2)*2:ceil(ih/2)*2",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-movflags",
            "+faststart",
            self._temporary,
        ]
        return subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def close(self) -> None:
        """Finishes the file; raises VideoError when there were no frames or encoding failed."""
        if self.num_frames == 0:
            raise VideoError("no frames were rendered")
        if self._gif_frames:
            first, *rest = self._gif_frames
            # GIF delays are in 1/100 s.
            first.save(
                self._temporary,
                save_all=True,
                append_images=rest,
                loop=0,
                duration=max(20, round(1000 / self.fps / 10) * 10),
            )
            self._gif_frames = []
        elif self._ffmpeg is not None:  # frames were written, so it was started
            ffmpeg = self._ffmpeg
            _input_of(ffmpeg).close()
            try:
                ffmpeg.wait(timeout=FFMPEG_FINISH_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                ffmpeg.kill()
                raise VideoError("ffmpeg did not finish the MP4 in time") from None
            if ffmpeg.returncode != 0:
                raise VideoError(f"ffmpeg failed: {_errors_of(ffmpeg)}")
        os.replace(self._temporary, self.path)

    def abort(self) -> None:
        """Drops what was written (on an error or Ctrl-C)."""
        if self._ffmpeg is not None and self._ffmpeg.poll() is None:
            self._ffmpeg.kill()
            self._ffmpeg.wait(timeout=FFMPEG_FINISH_TIMEOUT_S)
        self._gif_frames = []
        if os.path.exists(self._temporary):
            os.remove(self._temporary)


def _input_of(ffmpeg: subprocess.Popen) -> IO[bytes]:
    """The input pipe of an ffmpeg started with `stdin=PIPE`."""
    if ffmpeg.stdin is None:
        raise VideoError("ffmpeg was started without an input pipe")
    return ffmpeg.stdin


def _errors_of(ffmpeg: subprocess.Popen) -> str:
    """What a failed ffmpeg wrote to stderr (or its exit code)."""
    try:
        _, errors = ffmpeg.communicate(timeout=FFMPEG_FINISH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        ffmpeg.kill()
        return "it did not finish in time"
    return errors.decode(errors="replace").strip() or f"exit code {ffmpeg.returncode}"
