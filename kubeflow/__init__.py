"""Compiling and submitting the pipeline for Vertex AI Pipelines and Kubeflow Pipelines."""
