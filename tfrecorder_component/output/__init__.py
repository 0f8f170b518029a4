"""What a conversion leaves behind and how: where each file goes (`paths`), the output
folder's life, locked and finished by `_SUCCESS` (`folder`, `interrupt`), the extra
layouts beside TFX's (`layouts/`), the report page (`report_html`) and the progress
lines (`progress`)."""
