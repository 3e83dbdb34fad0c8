"""Writing what shapeinfer produces -- models and reports -- where the user said, and only there.

A destination is resolved once (:func:`resolve_destination`):

* a regular file, or a name that does not exist yet, is replaced atomically: the bytes go to a
  temporary file beside it, renamed into place only on success. Symbolic links, in the folder
  path or in the file name, are followed: a link's target is replaced, the link stays;
* anything else that exists -- a FIFO, a terminal, ``/dev/stdout``, ``/proc/self/fd/1`` -- is
  written through: opened and written, never replaced by a rename. A directory is refused;
* a destination that is, by any path or hard link, a file the input reads (the input model, its
  external data -- the files of every external tensor, wherever the model holds it:
  modelio.tensors.stored_tensors) is refused before anything is written.

:func:`write_model` writes a model whose tensors may be stored as external data. Written into
the folder the input's locations are relative to, the model reads the input's data files where
they are (nothing copied or read but the tiny tensors that must be inline). Elsewhere the data of
every external tensor (initializers, sparse ones, Constant and other tensor attributes, bodies at
any depth, functions, training_info) goes into one file beside the model (ONNX runtimes refuse
a location that leaves the model's folder), copied range by range from the source's files (in
the kernel where it can: copy_file_range, which shares the blocks on file systems that can),
never through memory whole. Never a hard link: onnx.load and onnx.checker refuse a data file
with more than one link ("potential hardlink attack") -- the source model's as well as ours.
Data file and model are committed together: on failure neither is left behind and a data file
that was there is put back.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from dataclasses import dataclass
from typing import Iterable, Optional

from onnx import ModelProto, TensorProto, numpy_helper

from .tensors import INITIALIZER, TYPED_FIELDS, stored_tensors
from .external import (check_external_data, external_data_files, external_info, external_range, external_tensors,
                       resolve_location, tensor_elements, tensor_nbytes)

DEFAULT_SIZE_THRESHOLD = 1024  # bytes, as onnx.save_model's size_threshold
MAX_MODEL_BYTES = 2**31  # protobuf cannot serialize a message this large
CHUNK_BYTES = 1 << 20  # external data is copied this much at a time
PAGE = 4096  # large tensors start on a page boundary (runtimes can map them)
# A tensor of at most this many elements is inline in what shapeinfer writes, whatever the size
# threshold: runtimes read shape tensors, axes, pads and scales while loading a model and refuse
# them as external data ("Cannot parse data from external tensors"). No shape input is longer.
INLINE_ELEMENTS = 64
_ZEROS = bytes(CHUNK_BYTES)



class OutputError(ValueError):
    """A destination refused before anything is written: it is (a link to) a file the input
    reads, a directory, not a file a model with external data can live in, ..."""


@dataclass(frozen=True)
class Destination:
    path: str  # as given
    target: str  # the file written: the real path of a file to replace, or the path to write through
    stream: bool  # written through (not a regular file): opened and written, never renamed over

    @property
    def folder(self) -> str:
        return os.path.dirname(self.target)

    def is_stdout(self) -> bool:
        """Whether writing here writes to this process's standard output."""
        try:
            a, b = os.fstat(1), os.stat(self.target)
        except OSError:
            return False
        return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@dataclass
class Written:
    """What :func:`write_model` wrote."""

    model: str  # the model file (as named by the caller)
    data: Optional[str] = None  # the external data file beside it, if any
    tensors: int = 0  # tensors stored in the data file
    data_bytes: int = 0  # the data file's size
    referenced: tuple = ()  # the input's data files the model reads where they are (not copied)

    def describe(self) -> str:
        if self.referenced:
            return f"external data: {', '.join(self.referenced)} (the input's, referenced where it is, not copied)"
        if self.data is None:
            return ""
        return f"external data: {self.data} ({self.tensors} tensor{'s' if self.tensors != 1 else ''}, " \
               f"{self.data_bytes} bytes)"

    def as_dict(self) -> dict:
        return {"model": self.model, "external_data": self.data, "tensors": self.tensors,
                "data_bytes": self.data_bytes, "referenced": list(self.referenced)}


# ------------------------------------------------------------------------------ destinations


def _through_special(path: str) -> bool:
    """Whether path is, or is a chain of symbolic links leading to, something under /dev or
    /proc (``/dev/stdout``, ``/proc/self/fd/1``): a stream even when it ends at a regular file."""
    p = os.path.abspath(path)
    for _ in range(40):
        if p.startswith(("/dev/", "/proc/")):
            return True
        if not os.path.islink(p):
            return False
        p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
    return False


def _stat(path: str):
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as e:  # a loop of links, a file used as a folder, no permission
        raise OutputError(f"{path}: {e.strerror or e}") from None


def _same_file(st, path: str) -> bool:
    try:
        other = os.stat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)


def resolve_destination(path, protected: Iterable = ()) -> Destination:
    """Where writing ``path`` goes; raises OutputError for a directory, a missing folder, or a
    file in ``protected`` -- ``(path, what)`` pairs, compared by device and inode, so that a
    symbolic link (in the folder path or the name) or a hard link to one of them is refused."""
    path = os.fspath(path)
    if not path:
        raise OutputError("the output path is empty")
    st = _stat(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{path}: is a directory; give a file name")
    if st is None and path.endswith(("/", os.sep)):
        raise OutputError(f"{path}: names a directory; give a file name")
    if st is not None and (not stat.S_ISREG(st.st_mode) or _through_special(path)):
        dest = Destination(path, path, stream=True)
    else:
        target = os.path.realpath(path)
        if not os.path.isdir(os.path.dirname(target)):
            raise OutputError(f"{path}: the folder {os.path.dirname(target)} does not exist")
        dest = Destination(path, target, stream=False)
    if st is not None:
        for p, what in protected:
            if _same_file(st, p):
                same = "" if os.path.abspath(p) == os.path.abspath(path) else f" ({p})"
                raise OutputError(f"{path}: is {what}{same}; refusing to overwrite it")
    return dest


def _mode_for(target: str) -> int:
    """The mode a new file at target gets: the replaced file's, else what open() would give."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _temp_beside(target: str, suffix: str = "") -> tuple:
    """(fd, path) of a new temporary file in target's folder, with the mode target will have."""
    fd, tmp = tempfile.mkstemp(prefix=".shapeinfer-", suffix=suffix, dir=os.path.dirname(target))
    made = False
    try:
        os.fchmod(fd, _mode_for(target))
        made = True
    finally:
        if not made:
            os.close(fd)
            os.unlink(tmp)
    return fd, tmp


def _unlink_quietly(path: Optional[str]) -> None:
    if path is not None:
        try:
            os.unlink(path)
        except OSError:
            pass


def _write_through(path: str, data: bytes) -> None:
    flags = os.O_WRONLY
    if stat.S_ISREG(os.stat(path).st_mode):  # /dev/stdout redirected to a file: append, never truncate
        flags |= os.O_APPEND
    with os.fdopen(os.open(path, flags), "wb") as fh:
        fh.write(data)


def write_bytes(dest: Destination, data: bytes, suffix: str = "") -> None:
    """Write data to a resolved destination: through a stream, or atomically into a file."""
    if dest.stream:
        _write_through(dest.target, data)
        return
    fd, tmp = _temp_beside(dest.target, suffix)
    placed = False
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, dest.target)
        placed = True
    finally:
        if not placed:
            _unlink_quietly(tmp)


# ------------------------------------------------------------------------------ models


def _check_data_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\\" in name or os.sep in name or "\0" in name:
        raise OutputError(f"external data file {name!r}: give a file name; the file goes beside the model")


def _payload(t: TensorProto) -> Optional[bytes]:
    """The raw little-endian bytes of an inline tensor, or None (strings)."""
    if t.data_type in (0, TensorProto.STRING, TensorProto.UNDEFINED):
        return None
    if t.HasField("raw_data") or not any(len(getattr(t, f)) for f in TYPED_FIELDS):
        return t.raw_data
    return numpy_helper.from_array(numpy_helper.to_array(t)).raw_data


def _set_external(t: TensorProto, location: str, offset: int, length: int) -> None:
    kept = [(e.key, e.value) for e in t.external_data if e.key not in ("location", "offset", "length")]
    del t.external_data[:]
    t.data_location = TensorProto.EXTERNAL
    for k, v in [("location", location), ("offset", str(offset)), ("length", str(length))] + kept:
        e = t.external_data.add()
        e.key, e.value = k, v


def _align(pos: int, length: int) -> int:
    step = PAGE if length >= PAGE else 64
    return (pos + step - 1) // step * step


@dataclass
class _Plan:
    """What goes into the data file: source ranges to copy and inline bytes to write."""

    copies: list  # (source path, offset, length, offset in the data file)
    inline: list  # (bytes, offset in the data file)
    size: int
    tensors: int = 0


def _read(path: str, offset: int, length: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read(length)
    if len(data) != length:
        raise OSError(errno.EIO, f"{path}: the external data file changed while it was read")
    return data


def _inline_small(out: ModelProto, source_dir: Optional[str]) -> list:
    """Make the external tensors of ``out`` (a copy) of at most INLINE_ELEMENTS elements inline
    (each is read: a few hundred bytes); the others, as (tensor, path, offset, length)."""
    ext = []
    for t in external_tensors(out):
        path = resolve_location(source_dir, external_info(t).get("location", ""))
        offset, length = external_range(t, path)
        if tensor_elements(t) <= INLINE_ELEMENTS and tensor_nbytes(t) == length:
            data = _read(path, offset, length)
            del t.external_data[:]
            t.data_location = TensorProto.DEFAULT
            t.raw_data = data
            continue
        ext.append((t, path, offset, length))
    return ext


def _plan(out: ModelProto, source_dir: Optional[str], name: str, threshold: int) -> _Plan:
    """Point every external tensor of ``out`` (a copy) at ``name`` and plan the data file:
    inline initializers of ``threshold`` bytes or more become external too, and tensors of at
    most INLINE_ELEMENTS elements are inline (an external one is read: a few hundred bytes)."""
    ext = _inline_small(out, source_dir)
    moved = []
    for place in stored_tensors(out):
        # the (dense) initializers of every graph; a sparse one stays inline: onnxruntime refuses
        # a sparse tensor stored as external data inside a body
        t = place.tensor
        if place.kind != INITIALIZER or t.data_location == TensorProto.EXTERNAL \
                or tensor_elements(t) <= INLINE_ELEMENTS:
            continue
        data = _payload(t)
        if data is not None and len(data) >= threshold:
            moved.append((t, data))
    return _layout(ext, moved, name)


def _layout(ext: list, moved: list, name: str) -> _Plan:
    """Tensors one after the other (equal source ranges once), large ones on page boundaries."""
    copies, inline, placed, pos = [], [], {}, 0
    for t, path, offset, length in ext:
        key = (path, offset, length)
        if key not in placed:
            placed[key] = _align(pos, length)
            copies.append((path, offset, length, placed[key]))
            pos = placed[key] + length
        _set_external(t, name, placed[key], length)
    for t, data in moved:
        at = _align(pos, len(data))
        inline.append((data, at))
        pos = at + len(data)
        for f in TYPED_FIELDS + ("raw_data",):
            t.ClearField(f)
        _set_external(t, name, at, len(data))
    return _Plan(copies, inline, pos, tensors=len(ext) + len(moved))


def _copy_chunk(src_fd: int, dst_fd: int, pos: int, n: int, at: int) -> int:
    """Copy up to n bytes from pos in src to at in dst; the number copied."""
    global _COPY_FILE_RANGE
    if _COPY_FILE_RANGE:
        try:
            done = os.copy_file_range(src_fd, dst_fd, n, pos, at)
            if done > 0:
                return done
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM):
                raise
            _COPY_FILE_RANGE = False
    chunk = os.pread(src_fd, n, pos)
    if chunk and chunk != (_ZEROS if len(chunk) == CHUNK_BYTES else bytes(len(chunk))):
        os.pwrite(dst_fd, chunk, at)  # an all-zero chunk stays a hole
    return len(chunk)


_COPY_FILE_RANGE = hasattr(os, "copy_file_range")


def _copy_range(src_fd: int, dst_fd: int, offset: int, length: int, at: int) -> None:
    """Copy length bytes from offset in src to at in dst, CHUNK_BYTES at a time, skipping the
    source's holes (the data file is sparse where the source is)."""
    end, pos = offset + length, offset
    while pos < end:
        try:
            pos = os.lseek(src_fd, pos, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:  # nothing but a hole up to the end of the file
                return
        if pos >= end:
            return
        try:
            stop = min(end, os.lseek(src_fd, pos, os.SEEK_HOLE))
        except OSError:
            stop = end
        if stop <= pos:
            stop = end
        while pos < stop:
            done = _copy_chunk(src_fd, dst_fd, pos, min(CHUNK_BYTES, stop - pos), at + pos - offset)
            if not done:
                raise OSError(errno.EIO, "the external data file changed while it was copied")
            pos += done


def _write_data(plan: _Plan, data_path: str) -> str:
    """A temporary file beside data_path holding the data."""
    fd, tmp = _temp_beside(data_path, ".data")
    written = False
    try:
        sources = {}
        try:
            for path, offset, length, at in plan.copies:
                if path not in sources:
                    sources[path] = os.open(path, os.O_RDONLY)
                _copy_range(sources[path], fd, offset, length, at)
        finally:
            for s in sources.values():
                os.close(s)
        for data, at in plan.inline:
            view = memoryview(data)
            for k in range(0, len(view), CHUNK_BYTES):
                os.pwrite(fd, view[k:k + CHUNK_BYTES], at + k)
        os.ftruncate(fd, plan.size)
        written = True
    finally:
        os.close(fd)
        if not written:
            _unlink_quietly(tmp)
    return tmp


@dataclass
class _Targets:
    dest: Destination  # the model's
    data_path: Optional[str]  # the data file's real path, when there is one to write
    name: str  # its location, relative to the model
    referenced: tuple = ()  # the input's data files, read where they are (see _targets)


def _targets(model, path: str, source_dir, external_data, protected) -> _Targets:
    """Resolve where the model (and its data file) go, refusing what must not be written."""
    if not isinstance(model, ModelProto):
        raise TypeError(f"expected an onnx.ModelProto, got {type(model).__name__}")
    protected = list(protected)
    has_external = next(external_tensors(model), None) is not None
    if has_external:
        if source_dir is None:
            raise OutputError("the model has external data: give source_dir, the folder its locations are relative to")
        check_external_data(model, source_dir)
        protected += [(p, "external data the input model reads") for p in external_data_files(model, source_dir)]
    if external_data is None and not has_external:
        return _Targets(resolve_destination(path, protected), None, "")
    if external_data is None:
        # Written into the folder the input's data files are relative to: the new model reads
        # them where they are (its locations stay valid there, as onnxruntime resolves them),
        # so gigabytes of weights are neither copied nor read.
        dest = resolve_destination(path, protected)
        if not dest.stream and dest.folder == os.path.realpath(source_dir) \
                and os.path.realpath(os.path.dirname(os.path.abspath(path))) == dest.folder:
            return _Targets(dest, None, "", tuple(os.path.relpath(p, dest.folder)
                                                  for p in external_data_files(model, source_dir)))
    name = external_data if external_data is not None else os.path.basename(path.rstrip("/" + os.sep)) + ".data"
    _check_data_name(name)
    dest = resolve_destination(path, protected)
    if dest.stream:
        raise OutputError(f"{path}: is not a regular file; a model with external data needs a folder for {name}")
    if os.path.realpath(os.path.dirname(os.path.abspath(path))) != dest.folder:
        raise OutputError(f"{path}: is a symbolic link into another folder ({dest.target}); a model with "
                          "external data must be written where it is loaded from: name that file")
    data_path = os.path.join(dest.folder, name)
    if data_path == dest.target:
        raise OutputError(f"external data file {name!r}: is the model file itself")
    if os.path.islink(data_path):
        raise OutputError(f"{data_path}: is a symbolic link; the external data must be a regular file beside the model")
    if resolve_destination(data_path, protected).stream:
        raise OutputError(f"{data_path}: is not a regular file; refusing to write external data into it")
    return _Targets(dest, data_path, name)


def check_model_destination(model: ModelProto, path, *, source_dir: Optional[str] = None,
                            external_data: Optional[str] = None, protected: Iterable = ()) -> Destination:
    """The destination :func:`write_model` would write to, or the OutputError it would raise:
    to refuse a destination before the work that produces the model."""
    return _targets(model, os.fspath(path), source_dir, external_data, protected).dest


def write_model(model: ModelProto, path, *, source_dir: Optional[str] = None, external_data: Optional[str] = None,
                size_threshold: int = DEFAULT_SIZE_THRESHOLD, protected: Iterable = ()) -> Written:
    """Write model to path so that it loads from there; returns what was written.

    ``source_dir`` is the folder the model's external data locations are relative to (the
    folder of the file it was loaded from; needed when it has external tensors, which
    shapeinfer.load_model leaves unloaded). A model without external tensors is written as one
    file, unless ``external_data`` names a data file. A model with external tensors written into
    ``source_dir`` itself, with no ``external_data`` named, keeps its locations: it reads the
    input's data files where they are (``Written.referenced``). Otherwise its tensors go into one file
    beside path -- ``external_data``, by default path's name + ``.data``: every external tensor
    (copied range by range, never read into memory whole; equal ranges once) and every inline
    initializer of ``size_threshold`` bytes or more; smaller ones stay inline, and so does every
    tensor of at most INLINE_ELEMENTS elements (runtimes refuse shape tensors stored outside the
    model). The model given is not changed.

    Refused with OutputError, before anything is written: a destination that is a directory,
    or (through any symbolic or hard link) a file the model reads or a file in ``protected``
    (``(path, what)`` pairs); a data file that is a symbolic link, not a regular file, or the
    model itself; a model with external data written into a stream, or through a symbolic link
    into another folder. The data file and the model are written to temporary files and renamed
    into place together only on success."""
    if size_threshold < 0:
        raise OutputError(f"size threshold {size_threshold}: expected 0 or more bytes")
    path = os.fspath(path)
    where = _targets(model, path, source_dir, external_data, protected)
    out = model
    plan = None
    if where.referenced:
        out = ModelProto()
        out.CopyFrom(model)
        _inline_small(out, source_dir)
        if out.ByteSize() >= MAX_MODEL_BYTES:
            raise OutputError(f"{path}: the model would have {out.ByteSize()} bytes, over protobuf's 2 GiB; "
                              "store its weights as external data (--external-data FILE)")
        write_bytes(where.dest, out.SerializeToString(), ".onnx")
        return Written(model=path, referenced=where.referenced)
    if where.data_path is not None:
        out = ModelProto()
        out.CopyFrom(model)
        plan = _plan(out, source_dir, where.name, size_threshold)
    if out.ByteSize() >= MAX_MODEL_BYTES:
        hint = "lower the size threshold" if plan is not None else "store its weights as external data (--external-data FILE)"
        raise OutputError(f"{path}: the model would have {out.ByteSize()} bytes, over protobuf's 2 GiB; {hint}")
    if plan is None or plan.tensors == 0:  # no data file, or no tensor reaches the threshold: one file
        write_bytes(where.dest, out.SerializeToString(), ".onnx")
        return Written(model=path)
    _commit(plan, out.SerializeToString(), where.dest.target, where.data_path)
    return Written(model=path, data=os.path.join(os.path.dirname(path), where.name), tensors=plan.tensors,
                   data_bytes=os.path.getsize(where.data_path))


def _commit(plan: _Plan, model_bytes: bytes, model_path: str, data_path: str) -> None:
    """Write the data file and the model to temporary files, then rename both into place; on
    failure remove what was written and put back the data file that was there."""
    data_tmp = model_tmp = backup = None
    placed = False
    try:
        data_tmp = _write_data(plan, data_path)
        fd, model_tmp = _temp_beside(model_path, ".onnx")
        with os.fdopen(fd, "wb") as fh:
            fh.write(model_bytes)
        if os.path.lexists(data_path):  # set aside, to put back if the model cannot be renamed
            backup = os.path.join(os.path.dirname(data_path), f".shapeinfer-{os.urandom(6).hex()}.old")
            os.replace(data_path, backup)
        os.replace(data_tmp, data_path)
        data_tmp, placed = None, True
        os.replace(model_tmp, model_path)
        model_tmp = None
    finally:
        if model_tmp is not None or data_tmp is not None:  # (not both renamed into place: undo)
            _unlink_quietly(data_tmp)
            _unlink_quietly(model_tmp)
            if placed:
                _unlink_quietly(data_path)
            if backup is not None:
                os.replace(backup, data_path)
                backup = None
        _unlink_quietly(backup)
