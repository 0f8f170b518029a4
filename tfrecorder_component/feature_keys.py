"""The keys of the records' features, named once: those of the TensorFlow Object
Detection API's `tf.train.Example` (`image/encoded`, `image/object/bbox/xmin`, ...),
which TFX's ExampleGen consumers, the Model Garden decoders and TFDS readers look for,
and this package's own additions in the same style (`image/class/label`,
`image/object/corner/*`). Written by `example`, read by `dataset`, `readers`,
`inspection` and the extra layouts.
"""

IMAGE_ENCODED = 'image/encoded'
IMAGE_FORMAT = 'image/format'
IMAGE_HEIGHT = 'image/height'
IMAGE_WIDTH = 'image/width'
IMAGE_CHANNELS = 'image/channels'
IMAGE_FILENAME = 'image/filename'
IMAGE_SOURCE_ID = 'image/source_id'
IMAGE_SHA256 = 'image/key/sha256'

CLASS_LABEL = 'image/class/label'
CLASS_TEXT = 'image/class/text'
# ImageNet's records' (build_imagenet_data.py's) class folder name, a WordNet id; written
# only with `class_synset`.
CLASS_SYNSET = 'image/class/synset'

SEGMENTATION_ENCODED = 'image/segmentation/class/encoded'
SEGMENTATION_FORMAT = 'image/segmentation/class/format'

# Each object's: one value an object, in the same order in every key.
OBJECT_PREFIX = 'image/object/'
BBOX_XMIN = 'image/object/bbox/xmin'
BBOX_YMIN = 'image/object/bbox/ymin'
BBOX_XMAX = 'image/object/bbox/xmax'
BBOX_YMAX = 'image/object/bbox/ymax'
OBJECT_CLASS_LABEL = 'image/object/class/label'
OBJECT_CLASS_TEXT = 'image/object/class/text'
OBJECT_IS_CROWD = 'image/object/is_crowd'
OBJECT_AREA = 'image/object/area'
OBJECT_DIFFICULT = 'image/object/difficult'
OBJECT_TRUNCATED = 'image/object/truncated'
OBJECT_MASK = 'image/object/mask'
# Each object's keypoints (`num` a count an object, the others flat over all objects).
KEYPOINT_PREFIX = 'image/object/keypoint/'
KEYPOINT_X = 'image/object/keypoint/x'
KEYPOINT_Y = 'image/object/keypoint/y'
KEYPOINT_VISIBILITY = 'image/object/keypoint/visibility'
KEYPOINT_NUM = 'image/object/keypoint/num'
KEYPOINT_TEXT = 'image/object/keypoint/text'
# An oriented box's four corners, flat over all objects.
CORNER_PREFIX = 'image/object/corner/'
CORNER_X = 'image/object/corner/x'
CORNER_Y = 'image/object/corner/y'

# A manifest's extra columns may not take a name under this prefix.
RESERVED_PREFIX = 'image/'
