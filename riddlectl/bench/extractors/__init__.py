"""Generated data with known truth for measuring the extractors of each data type."""
