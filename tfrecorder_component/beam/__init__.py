"""The conversion as Beam transforms, one job each, knowing nothing of TFX:

    read.py      ReadManifestRows: manifest files -> chunks of rows
    convert.py   LabelVocabulary, ConvertBatches: chunks -> records per split
    write.py     WriteSplits, RenumberLabels, WriteLabelFiles, WriteJsonLines
    report.py    Summarize, FindDuplicates, WriteReport
    pipeline.py  ConvertManifests: the steps above wired into one transform
    sink.py      the gzipped TFRecord sink
"""
