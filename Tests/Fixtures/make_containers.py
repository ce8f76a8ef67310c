#!/usr/bin/env python3
"""Makes the containers the tests judge, from a card JPEG and a benign photo (JPEG): every kind of
issue 30 with the card inside (card-*) and its benign twin (clean-*), plus bombs, encrypted,
truncated and hostile ones. Nothing here is extracted by the program under test.

Usage: make_containers.py CARD.jpg PHOTO.jpg OUT_DIR
Needs bsdtar (libarchive-tools: 7z, zstd, an encrypted zip) and qpdf (an encrypted PDF)."""
import io, os, struct, subprocess, sys, tarfile, zipfile

card_path, photo_path, out = sys.argv[1:4]
card = open(card_path, 'rb').read()
photo = open(photo_path, 'rb').read()
os.makedirs(out, exist_ok=True)
def path(name): return os.path.join(out, name)

def zip_of(name, entries, compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path(name), 'w', compression) as z:
        for entry, data in entries:
            # EPUB and ODF want their mimetype entry first and stored.
            z.writestr(entry, data, zipfile.ZIP_STORED if entry == 'mimetype' else compression)

def documents(prefix, picture):
    zip_of(prefix + '.zip', [('photos/readme.txt', b'holiday'), ('photos/pic.jpg', picture)])
    zip_of(prefix + '.cbz', [('001.jpg', photo), ('002.jpg', picture)])
    zip_of(prefix + '.epub', [('mimetype', b'application/epub+zip'),
                              ('META-INF/container.xml', b'<container/>'),
                              ('OEBPS/chapter1.xhtml', b'<html><body><img src="images/pic.jpg"/></body></html>'),
                              ('OEBPS/images/pic.jpg', picture)])
    zip_of(prefix + '.docx', [('[Content_Types].xml', b'<Types/>'), ('word/document.xml', b'<w:document/>'),
                              ('word/media/image1.jpeg', picture)])
    zip_of(prefix + '.pptx', [('[Content_Types].xml', b'<Types/>'), ('ppt/slides/slide1.xml', b'<p:sld/>'),
                              ('ppt/media/image1.jpeg', picture)])
    zip_of(prefix + '.odt', [('mimetype', b'application/vnd.oasis.opendocument.text'), ('content.xml', b'<office:document-content/>'),
                             ('Pictures/10000000.jpg', picture)])
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, 'w') as z:
        z.writestr('pic.jpg', picture)
    zip_of(prefix + '-nested.zip', [('inner/album.zip', inner.getvalue())])
    for mode, suffix in (('w:gz', '.tar.gz'), ('w:xz', '.tar.xz'), ('w:bz2', '.tar.bz2'), ('w', '.tar')):
        with tarfile.open(path(prefix + suffix), mode) as t:
            for entry, data in (('album/photo.jpg', photo), ('album/pic.jpg', picture)):
                info = tarfile.TarInfo(entry); info.size = len(data); t.addfile(info, io.BytesIO(data))
    work = path(prefix + '-work')
    os.makedirs(work, exist_ok=True)
    open(os.path.join(work, 'photo.jpg'), 'wb').write(photo)
    open(os.path.join(work, 'pic.jpg'), 'wb').write(picture)
    subprocess.run(['bsdtar', '--format', '7zip', '-cf', os.path.abspath(path(prefix + '.7z')), 'photo.jpg', 'pic.jpg'], cwd=work, check=True)
    subprocess.run(['bsdtar', '--zstd', '-cf', os.path.abspath(path(prefix + '.tar.zst')), 'photo.jpg', 'pic.jpg'], cwd=work, check=True)
    for f in os.listdir(work): os.remove(os.path.join(work, f))
    os.rmdir(work)
    rar4(prefix + '.rar', [('album/photo.jpg', photo), ('album/pic.jpg', picture)])
    # A PDF: the picture on page 2, large; and a PDF with it drawn small (120 pt) on page 2.
    pdf(prefix + '.pdf', [(photo, (72, 300, 400, 400)), (picture, (56, 56, 500, 500))])
    pdf(prefix + '-small.pdf', [(None, None), (picture, (400, 600, 120, 120))])

def rar4(name, entries):
    """A RAR 4 archive of stored entries, written by the format's own description (no free tool in
    Debian writes RAR): marker, main header, a file header per entry (CRC16 of each header, CRC32
    of the data, method 0x30 = store, host Unix), end of archive."""
    import zlib
    def block(head_type, flags, body):
        rest = struct.pack('<BHH', head_type, flags, 7 + len(body)) + body
        return struct.pack('<H', zlib.crc32(rest) & 0xFFFF) + rest
    data = b'Rar!\x1a\x07\x00' + block(0x73, 0, struct.pack('<HI', 0, 0))
    for entry, content in entries:
        n = entry.encode()
        data += block(0x74, 0x8000, struct.pack('<IIBIIBBHI', len(content), len(content), 3, zlib.crc32(content) & 0xFFFFFFFF,
                                                0x5A000000, 20, 0x30, len(n), 0o100644) + n) + content
    open(path(name), 'wb').write(data + block(0x7B, 0x4000, b''))

def jpeg_size(data):
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF: i += 1; continue
        marker = data[i + 1]
        if marker in (0xC0, 0xC1, 0xC2):
            height, width = struct.unpack('>HH', data[i + 5:i + 9]); return width, height
        i += 2 + struct.unpack('>H', data[i + 2:i + 4])[0]
    raise ValueError('no frame header')

def pdf(name, pages):
    """A minimal PDF: each page some text and at most one JPEG drawn at (x, y, w, h) points."""
    objects = []
    def add(body): objects.append(body); return len(objects)
    catalog, tree = add(None), add(None)
    kids = []
    for picture, rect in pages:
        content, resources = b'BT /F1 12 Tf 72 720 Td (A page of text) Tj ET\n', b''
        if picture:
            w, h = jpeg_size(picture)
            image = add(b'<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8 '
                        b'/Filter /DCTDecode /Length %d >>\nstream\n' % (w, h, len(picture)) + picture + b'\nendstream')
            x, y, rw, rh = rect
            content += b'q %g 0 0 %g %g %g cm /Im0 Do Q\n' % (rw, rh, x, y)
            resources = b'/XObject << /Im0 %d 0 R >>' % image
        stream = add(b'<< /Length %d >>\nstream\n' % len(content) + content + b'endstream')
        kids.append(add(b'<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << %s >> >>'
                        % (tree, stream, resources)))
    objects[catalog - 1] = b'<< /Type /Catalog /Pages %d 0 R >>' % tree
    objects[tree - 1] = b'<< /Type /Pages /Kids [%s] /Count %d >>' % (b' '.join(b'%d 0 R' % k for k in kids), len(kids))
    data, offsets = b'%PDF-1.4\n', []
    for i, body in enumerate(objects):
        offsets.append(len(data)); data += b'%d 0 obj\n' % (i + 1) + body + b'\nendobj\n'
    xref = len(data)
    data += b'xref\n0 %d\n0000000000 65535 f \n' % (len(objects) + 1) + b''.join(b'%010d 00000 n \n' % o for o in offsets)
    data += b'trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n' % (len(objects) + 1, catalog, xref)
    open(path(name), 'wb').write(data)

documents('card', card)
documents('clean', photo)
# A single compressed picture (gzip's raw entry).
import gzip
open(path('card.jpg.gz'), 'wb').write(gzip.compress(card))

# Hostile ones.
# One entry that expands 1000 times and starts as a JPEG (so it is copied to be judged).
with zipfile.ZipFile(path('bomb-entry.zip'), 'w', zipfile.ZIP_DEFLATED) as z:
    with z.open('big.jpg', 'w', force_zip64=True) as f:
        f.write(bytes([0xFF, 0xD8, 0xFF, 0xE0]))
        block = bytes(1 << 20)
        for _ in range(256): f.write(block)
# A tar.gz of one 256 MiB file of zeros (a stream: passed over only by reading it through).
with tarfile.open(path('bomb.tar.gz'), 'w:gz') as t:
    info = tarfile.TarInfo('zeros.bin'); info.size = 256 << 20
    class Zeros(io.RawIOBase):
        left = 256 << 20
        def readinto(self, b):
            n = min(len(b), self.left); b[:n] = bytes(n); self.left -= n; return n
    t.addfile(info, Zeros())
# 42.zip-style: zips of zips, five levels, the card at the bottom.
level = io.BytesIO()
with zipfile.ZipFile(level, 'w') as z: z.writestr('pic.jpg', card)
data = level.getvalue()
for _ in range(5):
    level = io.BytesIO()
    with zipfile.ZipFile(level, 'w', zipfile.ZIP_DEFLATED) as z:
        for i in range(4): z.writestr('lib%d.zip' % i, data)
    data = level.getvalue()
open(path('bomb-nested.zip'), 'wb').write(data)
# Names that try to leave any folder they would be extracted to.
with zipfile.ZipFile(path('traversal.zip'), 'w') as z:
    z.writestr('../../../../tmp/quarantine-traversal.jpg', card)
    z.writestr('/tmp/quarantine-absolute.jpg', photo)
# Encrypted: a zip (traditional PKWARE encryption) and a PDF with a user password.
work = path('enc-work'); os.makedirs(work, exist_ok=True)
open(os.path.join(work, 'pic.jpg'), 'wb').write(card)
subprocess.run(['bsdtar', '--format', 'zip', '--options', 'zip:encryption=traditional', '--passphrase', 'secret',
                '-cf', os.path.abspath(path('encrypted.zip')), 'pic.jpg'], cwd=work, check=True)
os.remove(os.path.join(work, 'pic.jpg')); os.rmdir(work)
subprocess.run(['qpdf', '--encrypt', 'user', 'owner', '256', '--', path('card.pdf'), path('encrypted.pdf')], check=True)
# Truncated: a zip cut before its second entry ends, a PDF cut in half, a benign tar.gz cut short.
whole = open(path('clean.zip'), 'rb').read(); open(path('truncated.zip'), 'wb').write(whole[:len(whole) // 2])
whole = open(path('card.pdf'), 'rb').read(); open(path('truncated.pdf'), 'wb').write(whole[:len(whole) // 2])
whole = open(path('clean.tar.gz'), 'rb').read(); open(path('truncated.tar.gz'), 'wb').write(whole[:len(whole) // 2])
