"""Generated data for the extractors, with its truth (see `cases`)."""
