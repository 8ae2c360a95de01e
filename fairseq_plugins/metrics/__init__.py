"""Evaluation metrics shared by the scripts and tasks (sequence-level accuracy)."""
