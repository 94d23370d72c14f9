# Included (``include "_bigendian.pxi"``) by the compiled modules that write Java's
# big-endian integers into records, consume queue entries, index slots and frames.


cdef inline void _put32(unsigned char *p, long long v) noexcept nogil:
    p[0] = (v >> 24) & 0xFF
    p[1] = (v >> 16) & 0xFF
    p[2] = (v >> 8) & 0xFF
    p[3] = v & 0xFF


cdef inline void _put64(unsigned char *p, long long v) noexcept nogil:
    _put32(p, v >> 32)
    _put32(p + 4, v & 0xFFFFFFFFLL)


cdef inline long long _get32(const unsigned char *p) noexcept nogil:
    """A signed 32-bit integer."""
    return <int>((<unsigned int>p[0] << 24) | (<unsigned int>p[1] << 16)
                 | (<unsigned int>p[2] << 8) | <unsigned int>p[3])
