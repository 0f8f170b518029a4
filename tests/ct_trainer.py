"""A Trainer module for the continuous-training test: it reads its window of spans as a
trainer would (`load_dataset(fn_args.train_files)`), and writes what each record's class
id is against the window's label map to `<serving_model_dir>/ids.json`."""
import json
import os

import tensorflow as tf

from tfrecorder_component.readers import dataset


def run_fn(fn_args):
  ids = dataset.label_map(fn_args.train_files)  # refuses spans whose maps disagree
  batches = dataset.load_dataset(fn_args.train_files, batch_size=16, image_size=(8, 8),
                                 labels='id')
  read = sum(int(tf.shape(labels)[0]) for _, labels in batches)
  records, wrong = 0, []
  files = sorted(f for p in fn_args.train_files for f in tf.io.gfile.glob(p))
  for data in tf.data.TFRecordDataset(files, compression_type='GZIP'):
    feature = tf.train.Example.FromString(data.numpy()).features.feature
    [text] = feature['image/class/text'].bytes_list.value
    [label] = feature['image/class/label'].int64_list.value
    records += 1
    if ids.get(text.decode()) != label:
      wrong.append([text.decode(), label])
  os.makedirs(fn_args.serving_model_dir, exist_ok=True)
  with open(os.path.join(fn_args.serving_model_dir, 'ids.json'), 'w') as f:
    json.dump({'train_files': list(fn_args.train_files), 'label_map': ids,
               'records': records, 'read': read, 'wrong': wrong}, f)
