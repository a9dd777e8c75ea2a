"""Terminal output: consoles that know where they draw, tables that fit, the live view."""
