"""Names shared by the steps and both ways of running them: the outputs of a chunk's
conversion (records, dead letters and side results) and the metrics namespace."""

RECORDS = 'records'        # (split, [serialized tf.train.Example]) per batch
ERRORS = 'errors'          # one dict per failed row (`errors.error_record`)
STATS = 'stats'            # a list of RecordStat per batch of records
BOX_ISSUES = 'box_issues'  # one dict per dropped or clipped box
SAMPLES = 'samples'        # (label, (uri, thumbnail)) for the contact sheet
OBJECTS = 'objects'        # ((source, uri), detection row) to be merged per image
METRICS_NAMESPACE = 'tfrecorder_component'
