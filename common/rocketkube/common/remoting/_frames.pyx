# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The frame decoder's scan, compiled: :func:`scan` splits received bytes into commands
as ``FrameDecoder.scan`` does (the layout is drawn in ``frame``), with the same commands,
the same end position and the same errors.

A JSON header whose fields need nothing done (a dict of string extFields, integer code,
opaque, flag and version, a string language) becomes its command here; any other frame
(binary headers, values fastjson would coerce, anything malformed) goes to
``frame.decode_frame``, which decides it exactly as without this module.
``tests/common/test_frames_kernel.py`` holds the two to the same results.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer

from orjson import JSONDecodeError, loads


cdef inline long _int32(const unsigned char *p) noexcept nogil:
    return <int>((<unsigned int>p[0] << 24) | (<unsigned int>p[1] << 16)
                 | (<unsigned int>p[2] << 8) | <unsigned int>p[3])


cdef object _plain_json(object header_view, object command_type, object json_type):
    """The command of a JSON header needing nothing done, or None."""
    try:
        header = loads(header_view)
    except JSONDecodeError:
        return None
    if type(header) is not dict:
        return None
    cdef dict h = <dict>header
    ext = h.get("extFields")
    if ext is None:
        ext = {}
    elif type(ext) is not dict:
        return None
    else:
        for value in (<dict>ext).values():
            if type(value) is not str:
                return None
    code = h.get("code")
    opaque = h.get("opaque", 0)
    flag = h.get("flag", 0)
    version = h.get("version", 0)
    if not (type(code) is int and type(opaque) is int and type(flag) is int
            and type(version) is int):
        return None
    language = h.get("language", "JAVA")
    if type(language) is not str:
        return None
    remark = h.get("remark")
    if type(remark) is not str:
        remark = None
    return command_type(code, opaque, flag, language, version, remark, ext, b"", json_type)


def scan(
    object view,
    Py_ssize_t max_frame_length,
    object command_type,
    object json_type,
    object decode_frame,
    object protocol_error,
    object too_large_error,
):
    """``(commands, end)``: the commands of every complete frame in ``view`` (a
    memoryview) and where the first incomplete one starts."""
    cdef Py_buffer buf
    cdef const unsigned char *data
    cdef Py_ssize_t size, pos = 0, end, header_len
    cdef long length, word
    cdef list out = []
    PyObject_GetBuffer(view, &buf, PyBUF_SIMPLE)
    try:
        data = <const unsigned char *>buf.buf
        size = buf.len
        while size - pos >= 4:
            length = _int32(data + pos)
            if length < 4 or length > max_frame_length:
                if length > max_frame_length:
                    raise too_large_error(
                        f"frame length {length} exceeds {max_frame_length}"
                    )
                raise protocol_error(f"frame length {length} is below the minimum of 4")
            end = pos + 4 + length
            if end > size:
                break
            word = _int32(data + pos + 4)
            header_len = word & 0xFFFFFF
            command = None
            if (word >> 24) & 0xFF == 0 and 4 + header_len <= length:
                command = _plain_json(view[pos + 8 : pos + 8 + header_len], command_type,
                                      json_type)
            if command is None:
                command = decode_frame(view[pos + 4 : end])
            else:
                command.body = view[pos + 8 + header_len : end]
            out.append(command)
            pos = end
    finally:
        PyBuffer_Release(&buf)
    return out, pos
