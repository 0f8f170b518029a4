"""Each step's work without Beam: what the Beam transforms (`beam/`) and the local run
(`local.py`) both call, so the two run the same code on every row and write the same
bytes.

    chunks.py    rows packed into chunk files, and read back
    convert.py   a chunk's rows converted into record batches, stats, errors, samples
    shards.py    gzipped TFRecord shards: written, read, and spread over a fixed count
    sorted_runs.py  the sorted run files of an external sort, read a block at a time
    sort.py      an external sort of keyed entries (COCO's join, Open Images' grouping)
    jsonl.py     the report's JSON-lines files, sorted by where each line comes from
    duplicates.py  the duplicate index: entries, sorted runs, merged hash ranges
    report.py    counts, the summary, summary.json and report.html

Nothing here imports Beam: a run on local files never pays for importing it.
"""
