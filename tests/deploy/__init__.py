"""Checks of the deployment files: compose, Kubernetes manifests, the Dockerfile."""
