"""The conversion pipeline as composite Beam transforms; nothing here knows about TFX."""
