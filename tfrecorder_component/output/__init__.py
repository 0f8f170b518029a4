"""What a conversion leaves behind and what the person running it sees: where each file
goes (`paths`), the output folder's life, locked, finished by `_SUCCESS` and left as it
was when a run is stopped (`folder`, with `interrupt` for Ctrl-C and SIGTERM), the extra
layouts beside TFX's (`layouts/`), the report page (`report_html`) and the progress
lines (`progress`)."""
