"""A manifest that mixes good rows with every kind of bad row, on real files."""
import os
import struct
import zlib

from PIL import Image

from images import encode, make_image, write_image, write_text


def png_bomb(width: int = 100_000, height: int = 100_000) -> bytes:
  """A valid-looking PNG of a few bytes whose header claims width x height pixels."""
  def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack('>I', len(body)) + kind + body + struct.pack(
        '>I', zlib.crc32(kind + body) & 0xffffffff)
  ihdr = struct.pack('>IIBBBBB', width, height, 8, 0, 0, 0, 0)
  return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) +
          chunk(b'IDAT', zlib.compress(b'\x00' * 64)) + chunk(b'IEND', b''))


def exif_rotated_jpeg(height: int = 20, width: int = 40) -> bytes:
  """A landscape JPEG whose EXIF says: rotate 90 degrees to display (orientation 6)."""
  im = make_image('RGB', height, width, seed=11)
  exif = Image.Exif()
  exif[0x0112] = 6
  return encode(im, 'JPEG', exif=exif.tobytes())


def _write(path, data):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'wb') as f:
    f.write(data)
  return data


def make(root: str, max_bytes: int = 50_000):
  """Writes images and `manifest.csv`; returns (manifest, good, bad).

  good: {uri: (bytes, split, labels)}; bad: {uri or row: reason}. Use max_bytes when
  converting so that `huge.png` is refused.
  """
  img = lambda name: os.path.join(root, 'img', name)  # pylint: disable=unnecessary-lambda-assignment
  good = {}
  good['img/ok.jpg'] = write_image(img('ok.jpg'), 'JPEG', 'RGB', 16, 24, seed=1)
  good['img/png_named.jpg'] = write_image(img('png_named.jpg'), 'PNG', 'RGB', 8, 8, seed=2)
  good['img/cmyk.jpg'] = write_image(img('cmyk.jpg'), 'JPEG', 'CMYK', 10, 12, seed=3)
  good['img/deep16.png'] = write_image(img('deep16.png'), 'PNG', 'I;16', 9, 7, seed=4)
  good['img/bilevel.png'] = write_image(img('bilevel.png'), 'PNG', '1', 8, 8, seed=5)
  good['img/palette.png'] = write_image(img('palette.png'), 'PNG', 'P', 8, 8, seed=6)
  frames = [make_image('RGB', 10, 14, seed=s).convert('P') for s in range(3)]
  good['img/anim.gif'] = _write(img('anim.gif'), encode(frames[0], 'GIF', save_all=True,
                                                        append_images=frames[1:]))
  good['img/rotated.jpg'] = _write(img('rotated.jpg'), exif_rotated_jpeg())
  good['img/dup.png'] = write_image(img('dup.png'), 'PNG', 'RGB', 6, 6, seed=7)
  good['img/leak.png'] = write_image(img('leak.png'), 'PNG', 'RGB', 6, 6, seed=8)

  jpeg = encode(make_image('RGB', 64, 64, seed=9), 'JPEG')
  png = encode(make_image('RGB', 64, 64, seed=10), 'PNG')
  _write(img('truncated.jpg'), jpeg[:len(jpeg) // 2])
  _write(img('truncated.png'), png[:len(png) * 2 // 3])
  _write(img('empty.jpg'), b'')
  write_text(img('notes.jpg'), 'this is not an image')
  os.makedirs(img('folder.jpg'), exist_ok=True)
  _write(img('bomb.png'), png_bomb())
  _write(img('huge.png'), os.urandom(max_bytes + 1))
  write_image(img('photo.webp'), 'WEBP', 'RGB', 8, 8, seed=12)

  rows = [
      ('TRAIN', 'img/ok.jpg', ' cat '),
      ('train', 'img/png_named.jpg', 'dog'),
      ('Validation', 'img/cmyk.jpg', 'cat'),
      ('TEST', 'img/deep16.png', 'dog'),
      ('test', 'img/bilevel.png', 'cat'),
      ('TRAIN', 'img/palette.png', 'dog'),
      ('TRAIN', 'img/anim.gif', 'cat'),
      ('TRAIN', 'img/rotated.jpg', 'dog'),
      ('TRAIN', 'img/dup.png', 'cat'),
      ('TRAIN', 'img/dup.png', 'cat'),         # the same image listed twice
      ('TRAIN', 'img/leak.png', 'dog'),
      ('TEST', 'img/leak.png', 'dog'),         # the same image in two splits
      ('TRAIN', 'img/missing.jpg', 'cat'),
      ('TRAIN', 'img/folder.jpg', 'cat'),
      ('TRAIN', 'img/empty.jpg', 'cat'),
      ('TRAIN', 'img/truncated.jpg', 'cat'),
      ('TRAIN', 'img/truncated.png', 'cat'),
      ('TRAIN', 'img/notes.jpg', 'cat'),
      ('TRAIN', 'img/bomb.png', 'cat'),
      ('TRAIN', 'img/huge.png', 'cat'),
      ('TRAIN', 'img/photo.webp', 'cat'),
      ('TRIAN', 'img/ok.jpg', 'cat'),          # unknown ML_USE
      ('TRAIN', '', 'cat'),                    # empty URI
  ]
  text = '\ufeffsplit,image_uri,label\n\n'
  for split, uri, label in rows:
    text += f'{split},"{uri}",{label}\n'
  text += 'TRAIN,img/ok.jpg\n'                 # too few columns for the header
  text += 'TRAIN,img/ok.jpg,cat,extra\n'       # too many
  text += '"TRAIN","img/q ""quoted"", comma.jpg",cat\n'  # quoted, and missing
  manifest = os.path.join(root, 'manifest.csv')
  with open(manifest, 'wb') as f:
    f.write(text.encode('utf-8'))
    f.write(b'TRAIN,img/caf\xe9.jpg,cat\n')     # not UTF-8
  expected_split = {'img/ok.jpg': 'train', 'img/png_named.jpg': 'train', 'img/cmyk.jpg': 'eval',
                    'img/deep16.png': 'test', 'img/bilevel.png': 'test',
                    'img/palette.png': 'train', 'img/anim.gif': 'train',
                    'img/rotated.jpg': 'train'}
  bad = {
      'img/missing.jpg': 'missing', 'img/folder.jpg': 'not_a_file', 'img/empty.jpg': 'empty',
      'img/truncated.jpg': 'truncated', 'img/truncated.png': 'truncated',
      'img/notes.jpg': 'not_an_image', 'img/bomb.png': 'too_large', 'img/huge.png': 'too_large',
      'img/photo.webp': 'unsupported_format',
  }
  bad_rows = {  # (line number, reason) of rows that fail before any image is read
      (24, 'unknown_split'), (25, 'bad_row'), (26, 'bad_row'), (27, 'bad_row'),
      (28, 'missing'), (29, 'bad_row')}
  return manifest, good, expected_split, bad, bad_rows
