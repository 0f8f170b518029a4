"""Pixels: probing and decode-checking image bytes (`probe`), the opt-in transforms
(`transform`: orient, colour, resize, encode, with their `geometry`), the detection box
rule (`boxes`) and the contact-sheet thumbnails of the report and `inspect`
(`thumbnail`). Beam-free."""
