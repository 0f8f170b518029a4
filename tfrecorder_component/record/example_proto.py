"""`tf.train.Example` message classes without importing TensorFlow.

Beam workers only build and serialize records; importing TensorFlow for that costs each
worker process about 450 MB and several seconds. These classes are built by the
protobuf library from a descriptor equivalent to TensorFlow's `feature.proto` and
`example.proto` (same package, names and field numbers), in a private descriptor pool so
they never clash with TensorFlow's own. Serialized bytes are identical (a test checks).
"""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto


def _file() -> descriptor_pb2.FileDescriptorProto:
  f = descriptor_pb2.FileDescriptorProto(name='tfrecorder_component/example.proto',
                                         package='tensorflow', syntax='proto3')

  def message(name, *fields):
    m = f.message_type.add(name=name)
    for number, (field_name, kind, label, type_name, packed) in enumerate(fields, start=1):
      field = m.field.add(name=field_name, number=number, type=kind, label=label)
      if type_name:
        field.type_name = type_name
      if packed:
        field.options.packed = True
    return m

  rep, opt = _F.LABEL_REPEATED, _F.LABEL_OPTIONAL
  message('BytesList', ('value', _F.TYPE_BYTES, rep, None, False))
  message('FloatList', ('value', _F.TYPE_FLOAT, rep, None, True))
  message('Int64List', ('value', _F.TYPE_INT64, rep, None, True))
  feature = message('Feature',
                    ('bytes_list', _F.TYPE_MESSAGE, opt, '.tensorflow.BytesList', False),
                    ('float_list', _F.TYPE_MESSAGE, opt, '.tensorflow.FloatList', False),
                    ('int64_list', _F.TYPE_MESSAGE, opt, '.tensorflow.Int64List', False))
  feature.oneof_decl.add(name='kind')
  for field in feature.field:
    field.oneof_index = 0
  features = message('Features', ('feature', _F.TYPE_MESSAGE, rep,
                                  '.tensorflow.Features.FeatureEntry', False))
  entry = features.nested_type.add(name='FeatureEntry')
  entry.options.map_entry = True
  entry.field.add(name='key', number=1, type=_F.TYPE_STRING, label=opt)
  entry.field.add(name='value', number=2, type=_F.TYPE_MESSAGE, label=opt,
                  type_name='.tensorflow.Feature')
  message('Example', ('features', _F.TYPE_MESSAGE, opt, '.tensorflow.Features', False))
  return f


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())


# protobuf 4.21 and newer build classes with GetMessageClass (protobuf 6 has nothing
# else); protobuf 3.20 through one MessageFactory, so nested types share their classes.
_get_class = getattr(message_factory, 'GetMessageClass', None) or message_factory.MessageFactory(
    _POOL).GetPrototype


def _message(name: str):
  return _get_class(_POOL.FindMessageTypeByName(f'tensorflow.{name}'))


BytesList = _message('BytesList')
FloatList = _message('FloatList')
Int64List = _message('Int64List')
Feature = _message('Feature')
Features = _message('Features')
Example = _message('Example')
