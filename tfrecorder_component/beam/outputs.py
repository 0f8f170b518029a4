"""Names shared by the Beam steps: tagged outputs (dead letters and side results) and the
metrics namespace."""

ERRORS = 'errors'          # one dict per failed row (`errors.error_record`)
STATS = 'stats'            # a list of RecordStat per batch of records
BOX_ISSUES = 'box_issues'  # one dict per dropped or clipped box
SAMPLES = 'samples'        # (label, (uri, thumbnail)) for the contact sheet
OBJECTS = 'objects'        # ((source, uri), detection row) to be merged per image
METRICS_NAMESPACE = 'tfrecorder_component'
