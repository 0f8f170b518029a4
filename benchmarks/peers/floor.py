"""A floor for one conversion: what the work itself costs, with no framework.

  python floor.py MANIFEST OUT_DIR [WORKERS]

Reads the AutoML CSV (split,uri,label), splits the rows into WORKERS contiguous parts, and
each process does per row: read the file; the product's own decode check,
`tfrecorder_component.images.probe.probe_image(data, decode=True)` (TensorFlow's decision
whether `tf.io.decode_image` takes the bytes, without TensorFlow; it also gives the
format, height and width the record holds), so the floor costs what the product's check
costs, whatever that check does; SHA-256; a tf.train.Example built with protobuf's own
message class (no TensorFlow); one uncompressed TFRecord frame with masked CRC-32C
(google_crc32c). No report, no splits, no checks beyond the decode: the lower bound the
product's whole run is measured against. It runs in the product's environment (the
package is imported from there); an image that fails the check fails the run.

Copied from shared/bench/floor.py for the benchmark's `peers` part, with two changes
outside the per-row work so that it reads the benchmark's own manifests
(benchmarks/data.py and benchmarks/photos.py: AutoML CSV without a header, URIs relative
to the manifest's folder): the first line is skipped only when it is a header (its URI
field is not a file), and relative URIs are resolved against the manifest's folder, as
the product and the other peers resolve them; and one change in it: the decode check is
the product's `probe_image(data, decode=True)`, where the copy decoded with Pillow at 1/8
scale (draft + load) and read the size with a second Image.open.
"""
import hashlib
import multiprocessing as mp
import os
import struct
import sys

import google_crc32c

from tfrecorder_component.images.probe import probe_image


def _example_class():
  from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
  f = descriptor_pb2.FileDescriptorProto(name='floor_example.proto', package='floor', syntax='proto3')
  def msg(name, fields):
    m = f.message_type.add(name=name)
    for num, (fname, ftype, label, tname) in enumerate(fields, 1):
      fd = m.field.add(name=fname, number=num, type=ftype, label=label)
      if tname:
        fd.type_name = tname
    return m
  T, L = descriptor_pb2.FieldDescriptorProto, descriptor_pb2.FieldDescriptorProto
  msg('BytesList', [('value', T.TYPE_BYTES, L.LABEL_REPEATED, None)])
  msg('FloatList', [('value', T.TYPE_FLOAT, L.LABEL_REPEATED, None)])
  msg('Int64List', [('value', T.TYPE_INT64, L.LABEL_REPEATED, None)])
  feat = f.message_type.add(name='Feature')
  feat.oneof_decl.add(name='kind')
  for num, (n, t) in enumerate([('bytes_list', '.floor.BytesList'), ('float_list', '.floor.FloatList'),
                                ('int64_list', '.floor.Int64List')], 1):
    feat.field.add(name=n, number=num, type=T.TYPE_MESSAGE, label=L.LABEL_OPTIONAL, type_name=t,
                   oneof_index=0)
  fs = f.message_type.add(name='Features')
  entry = fs.nested_type.add(name='FeatureEntry')
  entry.options.map_entry = True
  entry.field.add(name='key', number=1, type=T.TYPE_STRING, label=L.LABEL_OPTIONAL)
  entry.field.add(name='value', number=2, type=T.TYPE_MESSAGE, label=L.LABEL_OPTIONAL,
                  type_name='.floor.Feature')
  fs.field.add(name='feature', number=1, type=T.TYPE_MESSAGE, label=L.LABEL_REPEATED,
               type_name='.floor.Features.FeatureEntry')
  msg('Example', [('features', T.TYPE_MESSAGE, L.LABEL_OPTIONAL, '.floor.Features')])
  pool = descriptor_pool.DescriptorPool()
  pool.Add(f)
  desc = pool.FindMessageTypeByName('floor.Example')
  if hasattr(message_factory, 'GetMessageClass'):  # protobuf 4.22+
    return message_factory.GetMessageClass(desc)
  return message_factory.MessageFactory(pool).GetPrototype(desc)


def _mask(crc):
  return (((crc >> 15) | (crc << 17)) + 0xa282ead8) & 0xffffffff


def work(args):
  rows, out_path, labels = args
  Example = _example_class()
  with open(out_path, 'wb') as out:
    for uri, label in rows:
      with open(uri, 'rb') as fh:
        data = fh.read()
      info = probe_image(data, decode=True)
      digest = hashlib.sha256(data).hexdigest().encode()
      ex = Example()
      f = ex.features.feature
      f['image/encoded'].bytes_list.value.append(data)
      f['image/format'].bytes_list.value.append(info.format.encode())
      f['image/height'].int64_list.value.append(info.height)
      f['image/width'].int64_list.value.append(info.width)
      f['image/key/sha256'].bytes_list.value.append(digest)
      f['image/source_id'].bytes_list.value.append(uri.encode())
      f['image/class/text'].bytes_list.value.append(label.encode())
      f['image/class/label'].int64_list.value.append(labels[label])
      rec = ex.SerializeToString()
      head = struct.pack('<Q', len(rec))
      out.write(head + struct.pack('<I', _mask(google_crc32c.value(head))) + rec
                + struct.pack('<I', _mask(google_crc32c.value(rec))))
  return len(rows)


def main():
  manifest, out_dir = sys.argv[1], sys.argv[2]
  workers = int(sys.argv[3]) if len(sys.argv) > 3 else os.cpu_count()
  rows = []
  root = os.path.dirname(os.path.abspath(manifest))
  with open(manifest) as f:
    for line in f:
      _, uri, label = line.rstrip('\n').split(',')
      rows.append((os.path.join(root, uri), label))
  if rows and not os.path.isfile(rows[0][0]):  # a header row
    rows = rows[1:]
  labels = {l: i for i, l in enumerate(sorted({l for _, l in rows}))}
  os.makedirs(out_dir, exist_ok=True)
  k = (len(rows) + workers - 1) // workers
  parts = [(rows[i * k:(i + 1) * k], os.path.join(out_dir, f'part-{i:05d}.tfrecord'), labels)
           for i in range(workers)]
  with mp.get_context('fork').Pool(workers) as pool:
    n = sum(pool.map(work, parts))
  print(f'{n} records')


if __name__ == '__main__':
  main()
