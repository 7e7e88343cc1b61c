"""Small helpers the whole trainer uses, with no dependency on the rest of it: deprecation
warnings (`deprecation`), random generators as plain data (`rng`), durable file writes
(`files`)."""
