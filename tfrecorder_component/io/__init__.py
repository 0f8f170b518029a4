"""Bytes in and out, on any file system: files and object storage, the local stand-ins
for remote folders, TFRecord framing, and external sorts in bounded memory. Nothing here
knows of manifests, records or runs."""
