"""Each step's work without Beam: what the Beam transforms (`engines/beam/`) and the local
run (`engines/local/`) both call, so the two run the same code on every row and
write the same bytes, and what a run leaves once its rows are converted (`run_plan`).

    row.py       one manifest row to one record: read, probe, decode-check, transform
    chunks.py    rows packed into chunk files, and read back
    convert_chunks.py  a chunk's rows converted into record batches, stats, errors, samples
    deadline.py  the row time limit in the process that converts
    vocabulary.py  the run's labels and their ids, from every chunk
    shards.py    a split's records spread over a fixed count of shards, and written
    jsonl.py     the report's JSON-lines files, sorted by where each line comes from
    duplicates.py  the duplicate index: entries, sorted runs, merged hash ranges
    report.py    counts, the summary, summary.json and report.html
    run_plan.py  what follows the conversion, in order, for both engines: the Tally each
                 part keeps, the label files, the layouts' context, the report's files
    warnings.py  what a run that did not fail may have misread, in the summary's warnings
    policy.py    the error policy: how many failed rows a run may have, told in lines
    outputs.py   the names the steps and both engines share

Nothing here imports Beam: a run on local files never pays for importing it. The bytes
themselves (TFRecord framing, external sorts, files) are `io/`'s.
"""
