"""Evaluation harness: datasets, methods (baselines and ablations), metrics, runner and reports."""
