"""Measuring: `riddlectl bench` and the physical reference it compares the pipeline with."""
