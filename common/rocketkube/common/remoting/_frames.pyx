# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Wire frames, compiled: the command types, the frame decoder's scan and the writing of
templated answers.

:class:`RemotingCommand` and :class:`TemplatedResponse` are this module's own types, with
the fields, methods, equality and repr of their Python siblings (the dataclass in
``command``, the class in ``frame``), which serve these when the module is built. A
request whose extFields names are all one letter keeps them as ``header_names`` and
``header_values`` until ``ext_fields`` is first read.

:class:`Scanner` splits received bytes into commands as ``FrameDecoder.scan`` does (the
layout is drawn in ``frame``), with the same commands, the same end position and the same
errors; :func:`templated_frames` and :func:`held_frames` write a run's templated answers
as ``frame.templated_frames`` and ``frame.held_frames`` do, joining each template's parts
and values instead of a string format per answer, straight into the one buffer of the
run's frames.

A JSON header in the subset remoting clients send (an object of integers, strings and
an extFields object of strings: no floats, booleans, nulls or arrays, names unescaped,
integers of 18 digits at most) whose fields need nothing done is parsed here, without
orjson; any other frame (binary headers, values fastjson would coerce, anything outside
the subset or malformed) goes to ``frame.decode_frame``, which decides it exactly as
without this module.
``tests/common/test_frames_compiled.py`` holds the two to the same results.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.unicode cimport (
    PyUnicode_AsUTF8AndSize,
    PyUnicode_DecodeASCII,
    PyUnicode_DecodeUTF8,
    PyUnicode_FromOrdinal,
)
from libc.string cimport memchr, memcmp, memcpy, memset

include "_bigendian.pxi"

from struct import Struct as _Struct

from rocketkube.common.errors import FrameTooLargeError as _FrameTooLargeError
from rocketkube.common.errors import ProtocolError as _ProtocolError
from rocketkube.common.remoting import codes as _codes

_JSON_TYPE = _codes.SerializeType.JSON
_HEAD = _Struct(">ii")
cdef Py_ssize_t _COPIED_BODY = _codes.COPIED_BODY
cdef long _ONEWAY = _codes.FLAG_ONEWAY
cdef long _RESPONSE = _codes.FLAG_RESPONSE
_SERVER_VERSION = _codes.SERVER_VERSION
_SUCCESS = _codes.ResponseCode.SUCCESS


include "_commands.pxi"
include "_json_headers.pxi"


# -- the scan -----------------------------------------------------------------------------

cdef class Scanner:
    """``FrameDecoder.scan`` compiled, with its own cache of short strings (one scanner
    per decoder, so per connection)."""

    cdef _Cached cache[CACHE_SIZE]

    def __cinit__(self):
        memset(self.cache, 0, sizeof(self.cache))

    def __dealloc__(self):
        for i in range(CACHE_SIZE):
            Py_XDECREF(self.cache[i].string)
            self.cache[i].string = NULL

    def __call__(
        self,
        object view,
        Py_ssize_t max_frame_length,
        object decode_frame,
    ):
        """``(commands, end)``: the commands of every complete frame in ``view`` (a
        memoryview) and where the first incomplete one starts."""
        cdef Py_buffer buf
        cdef const unsigned char *data
        cdef Py_ssize_t size, pos = 0, end, header_len, start
        cdef long length, word
        cdef list out = []
        PyObject_GetBuffer(view, &buf, PyBUF_SIMPLE)
        try:
            data = <const unsigned char *>buf.buf
            size = buf.len
            while size - pos >= 4:
                length = _get32(data + pos)
                if length < 4 or length > max_frame_length:
                    if length > max_frame_length:
                        raise _FrameTooLargeError(
                            f"frame length {length} exceeds {max_frame_length}"
                        )
                    raise _ProtocolError(f"frame length {length} is below the minimum of 4")
                end = pos + 4 + length
                if end > size:
                    break
                word = _get32(data + pos + 4)
                header_len = word & 0xFFFFFF
                command = None
                if (word >> 24) & 0xFF == 0 and 4 + header_len <= length:
                    start = pos + 8 + header_len
                    if end - start <= _COPIED_BODY:
                        body = PyBytes_FromStringAndSize(<const char *>data + start, end - start)
                    else:
                        body = view[start:end]
                    command = _plain_header(data + pos + 8, data + start, self.cache, body)
                if command is None:
                    command = decode_frame(view[pos + 4 : end])
                out.append(command)
                pos = end
        finally:
            PyBuffer_Release(&buf)
        return out, pos


include "_answer_frames.pxi"
