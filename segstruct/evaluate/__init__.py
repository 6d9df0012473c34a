"""Scores (the VOC measure), the paired bootstrap, data checks and the diagnosis
of a trained model."""
