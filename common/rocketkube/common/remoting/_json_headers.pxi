# Part of ``_frames.pyx`` (included there): the JSON header subset parser (strings, integers,
# extFields) the scan reads remoting headers with.

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* How many bytes from p are plain string bytes (none of '"', a backslash, a control
       character or a byte >= 128), counted eight at a time while eight are left before end
       (the lowest flagged byte of each test is exact, so the first of all is): the caller
       looks at the byte there one at a time. Where the byte order does not allow it, 0. */
    static inline Py_ssize_t rk_plain_run(const unsigned char *p, const unsigned char *end) {
        const unsigned char *start = p;
    #if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
        while (end - p >= 8) {
            uint64_t x, quote, slash, found;
            memcpy(&x, p, 8);
            quote = x ^ (ones * 0x22);
            slash = x ^ (ones * 0x5C);
            found = (((quote - ones) & ~quote) | ((slash - ones) & ~slash)
                     | ((x - ones * 0x20) & ~x) | x) & highs;
            if (found)
                return (p - start) + (__builtin_ctzll(found) >> 3);
            p += 8;
        }
    #endif
        return p - start;
    }

    /* A hash of a short string (up to 31 bytes) from a few word loads, not a byte loop:
       its first, middle and last eight bytes (four, or three single bytes, when shorter). */
    static inline unsigned int rk_short_hash(const unsigned char *text, Py_ssize_t n) {
        uint64_t first = 0, middle = 0, last = 0, h;
        if (n >= 8) {
            memcpy(&first, text, 8);
            memcpy(&middle, text + n / 2 - 4, 8);
            memcpy(&last, text + n - 8, 8);
        } else if (n >= 4) {
            uint32_t a, b;
            memcpy(&a, text, 4);
            memcpy(&b, text + n - 4, 4);
            first = a;
            last = b;
        } else if (n > 0) {
            first = text[0] | ((uint64_t)text[n / 2] << 8) | ((uint64_t)text[n - 1] << 16);
        }
        h = (first * 0x9E3779B97F4A7C15ULL) ^ ((middle + (uint64_t)n) * 0xC2B2AE3D27D4EB4FULL)
            ^ (last * 0x165667B19E3779F9ULL);
        return (unsigned int)(h >> 40);
    }
    """
    Py_ssize_t rk_plain_run(const unsigned char *p, const unsigned char *end) noexcept
    unsigned int rk_short_hash(const unsigned char *text, Py_ssize_t n) noexcept


cdef inline const unsigned char *_ws(const unsigned char *p, const unsigned char *end) noexcept:
    if p < end and p[0] > 32:
        return p  # the usual case: no white space (Java's and the SDK's headers have none)
    while p < end and (p[0] == 32 or p[0] == 9 or p[0] == 10 or p[0] == 13):
        p += 1
    return p


cdef inline int _hex(unsigned char c) noexcept:
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


cdef int _hex4(const unsigned char *p) noexcept:
    cdef int value = 0, i, digit
    for i in range(4):
        digit = _hex(p[i])
        if digit < 0:
            return -1
        value = value * 16 + digit
    return value


DEF CACHE_SIZE = 256
DEF CACHED_LENGTH = 31


cdef struct _Cached:
    Py_ssize_t length
    char text[CACHED_LENGTH]
    PyObject *string


cdef object _cached_ascii(_Cached *cache, const unsigned char *text, Py_ssize_t n):
    """The str of the ASCII ``text``, shared through ``cache`` when short: the one-letter
    names and the short values of every send header come again and again."""
    cdef _Cached *entry
    if n > CACHED_LENGTH:
        return PyUnicode_DecodeASCII(<const char *>text, n, NULL)
    entry = &cache[rk_short_hash(text, n) & (CACHE_SIZE - 1)]
    if entry.string != NULL and entry.length == n and memcmp(entry.text, text, n) == 0:
        return <object>entry.string
    made = PyUnicode_DecodeASCII(<const char *>text, n, NULL)
    Py_XDECREF(entry.string)
    Py_INCREF(made)
    entry.string = <PyObject *>made
    entry.length = n
    memcpy(entry.text, text, n)
    return made


cdef inline object _string(const unsigned char **at, const unsigned char *end, bint keep,
                           _Cached *cache):
    """The JSON string at ``*at`` (its opening quote), ``*at`` moved past it; the str
    when ``keep``, else True. None: not a string this parser takes (the caller then
    leaves the header to orjson)."""
    cdef const unsigned char *p = at[0] + 1
    cdef const unsigned char *start = p
    cdef bint escaped = False, ascii = True
    cdef unsigned char c
    cdef Py_ssize_t n
    while True:
        p += rk_plain_run(p, end)
        if p >= end:
            return None
        c = p[0]
        if c == 34:  # "
            break
        if c < 32:
            return None  # a control character: orjson refuses it
        if c == 92:  # backslash
            escaped = True
            p += 2
            continue
        if c >= 128:
            ascii = False
        p += 1
    if p > end:
        return None
    n = p - start
    at[0] = p + 1
    if not escaped:
        if ascii:
            return _cached_ascii(cache, start, n) if keep else True
        try:
            text = PyUnicode_DecodeUTF8(<const char *>start, n, NULL)
        except UnicodeDecodeError:
            return None
        return text if keep else True
    return _unescaped(start, n, keep, ascii)


cdef object _unescaped(const unsigned char *start, Py_ssize_t n, bint keep, bint ascii):
    """The str of the escaped JSON string ``start[:n]`` (between its quotes; ``ascii``
    when none of its bytes is), or True when not ``keep``; None when it is not valid."""
    cdef const unsigned char *p
    cdef const unsigned char *slash
    cdef unsigned char c
    cdef char *out
    cdef int code, low, w
    cdef char small[1024]
    if n <= 1024:
        out = &small[0]
    else:
        out = <char *>PyMem_Malloc(n)
    if out == NULL:
        raise MemoryError()
    try:
        w = 0
        p = start
        while p < start + n:
            slash = <const unsigned char *>memchr(p, 92, start + n - p)
            if slash == NULL:
                slash = start + n
            memcpy(out + w, p, slash - p)
            w += slash - p
            p = slash
            if p >= start + n:
                break
            c = p[1]
            p += 2
            if c == 34 or c == 92 or c == 47:
                out[w] = <char>c
            elif c == 98:
                out[w] = 8
            elif c == 102:
                out[w] = 12
            elif c == 110:
                out[w] = 10
            elif c == 114:
                out[w] = 13
            elif c == 116:
                out[w] = 9
            elif c == 117:
                if p + 4 > start + n:
                    return None
                code = _hex4(p)
                p += 4
                if code < 0 or 0xDC00 <= code <= 0xDFFF:
                    return None
                if 0xD800 <= code <= 0xDBFF:
                    if p + 6 > start + n or p[0] != 92 or p[1] != 117:
                        return None
                    low = _hex4(p + 2)
                    if not 0xDC00 <= low <= 0xDFFF:
                        return None
                    p += 6
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                if code < 0x80:
                    out[w] = <char>code
                    w += 1
                    continue
                ascii = False
                if code < 0x800:
                    out[w] = <char>(0xC0 | (code >> 6))
                    out[w + 1] = <char>(0x80 | (code & 0x3F))
                    w += 1
                elif code < 0x10000:
                    out[w] = <char>(0xE0 | (code >> 12))
                    out[w + 1] = <char>(0x80 | ((code >> 6) & 0x3F))
                    out[w + 2] = <char>(0x80 | (code & 0x3F))
                    w += 2
                else:
                    out[w] = <char>(0xF0 | (code >> 18))
                    out[w + 1] = <char>(0x80 | ((code >> 12) & 0x3F))
                    out[w + 2] = <char>(0x80 | ((code >> 6) & 0x3F))
                    out[w + 3] = <char>(0x80 | (code & 0x3F))
                    w += 3
            else:
                return None
            w += 1
        if ascii:  # nothing to validate
            return PyUnicode_DecodeASCII(out, w, NULL) if keep else True
        try:
            text = PyUnicode_DecodeUTF8(out, w, NULL)
        except UnicodeDecodeError:
            return None
        return text if keep else True
    finally:
        if out != &small[0]:
            PyMem_Free(out)


cdef object _integer(const unsigned char **at, const unsigned char *end):
    """The JSON integer at ``*at`` (18 digits at most), ``*at`` moved past it; None for
    any other number (orjson decides those)."""
    cdef const unsigned char *p = at[0]
    cdef const unsigned char *digits
    cdef long long value = 0
    cdef bint negative = False
    if p < end and p[0] == 45:  # -
        negative = True
        p += 1
    digits = p
    while p < end and 48 <= p[0] <= 57:
        value = value * 10 + (p[0] - 48)
        p += 1
        if p - digits > 18:
            return None
    if p == digits or (p - digits > 1 and digits[0] == 48):
        return None  # no digits, or a leading zero
    if p < end and (p[0] == 46 or p[0] == 101 or p[0] == 69):
        return None  # a fraction or an exponent
    at[0] = p
    return -value if negative else value


cdef inline bint _is_key(const unsigned char *key, Py_ssize_t n, const char *name,
                         Py_ssize_t size) noexcept:
    return n == size and memcmp(key, name, size) == 0


cdef enum:
    _OTHER, _CODE, _OPAQUE, _FLAG, _VERSION, _LANGUAGE, _REMARK, _EXT_FIELDS


cdef int _field(const unsigned char *key, Py_ssize_t n) noexcept:
    """Which header member ``key`` names (``_OTHER``: one the command does not keep)."""
    if _is_key(key, n, "code", 4):
        return _CODE
    if _is_key(key, n, "opaque", 6):
        return _OPAQUE
    if _is_key(key, n, "flag", 4):
        return _FLAG
    if _is_key(key, n, "version", 7):
        return _VERSION
    if _is_key(key, n, "language", 8):
        return _LANGUAGE
    if _is_key(key, n, "remark", 6):
        return _REMARK
    if _is_key(key, n, "extFields", 9):
        return _EXT_FIELDS
    return _OTHER


DEF LETTERS_KEPT = 16


cdef object _ext_fields(const unsigned char **at, const unsigned char *end, _Cached *cache):
    """The extFields object at ``*at``: a dict of strings; or, while every name is a
    distinct lowercase letter, ``(names, values)``: the letters as a str and the values
    in a list, in order (see ``RemotingCommand.header_values``); None for anything else."""
    cdef const unsigned char *p = _ws(at[0] + 1, end)
    cdef dict ext = None
    cdef list values = [None] * LETTERS_KEPT  # room for a send's 13, cut to size at the end
    cdef char names[26]
    cdef Py_ssize_t count = 0, j
    cdef unsigned int seen = 0
    cdef unsigned char letter
    if p < end and p[0] == 125:  # }
        at[0] = p + 1
        return {}
    while True:
        if p >= end or p[0] != 34:
            return None
        letter = 0
        key = None  # a one-letter name's str: made only if the dict needs it
        if end - p > 2 and p[2] == 34 and 32 <= p[1] < 128 and p[1] != 34 and p[1] != 92:
            letter = p[1]  # a one-letter name (send and pull headers)
            p += 3
        else:
            key = _string(&p, end, True, cache)
            if key is None:
                return None
        p = _ws(p, end)
        if p >= end or p[0] != 58:  # :
            return None
        p = _ws(p + 1, end)
        if p >= end or p[0] != 34:
            return None  # a value fastjson would coerce: the Python path does
        if end - p > 2 and p[2] == 34 and 32 <= p[1] < 128 and p[1] != 34 and p[1] != 92:
            value = PyUnicode_FromOrdinal(p[1])  # one character: a queue id, a flag...
            p += 3
        else:
            value = _string(&p, end, True, cache)
            if value is None:
                return None
        if ext is None and 97 <= letter <= 122 and not (seen >> (letter - 97)) & 1:
            seen |= 1u << (letter - 97)
            names[count] = <char>letter
            if count < LETTERS_KEPT:
                values[count] = value
            else:
                values.append(value)
            count += 1
        else:
            if ext is None:  # the names so far go in first, in their order
                del values[count:]
                ext = {}
                for j in range(count):
                    ext[PyUnicode_FromOrdinal(<unsigned char>names[j])] = values[j]
            ext[PyUnicode_FromOrdinal(letter) if key is None else key] = value
        p = _ws(p, end)
        if p < end and p[0] == 44:  # ,
            p = _ws(p + 1, end)
            continue
        if p < end and p[0] == 125:
            at[0] = p + 1
            if ext is not None:
                return ext
            del values[count:]
            return (_cached_ascii(cache, <const unsigned char *>names, count), values)
        return None


cdef dict _as_dict(str names, list values):
    """The extFields dict of one-letter ``names`` and their ``values``."""
    cdef dict ext = {}
    cdef Py_ssize_t j
    for j in range(len(values)):
        ext[names[j]] = values[j]
    return ext


cdef object _plain_header(const unsigned char *p, const unsigned char *end, _Cached *cache,
                          object body):
    """The command of a JSON header in the subset this parser takes (an object of integer,
    string and extFields members) whose fields need nothing done; None for any other,
    which ``decode_json_header`` then decides with orjson."""
    cdef const unsigned char *key
    cdef Py_ssize_t key_len
    cdef int field
    code = None
    opaque = flag = version = 0
    language = "JAVA"
    remark = None
    ext = None
    p = _ws(p, end)
    if p >= end or p[0] != 123:  # {
        return None
    p = _ws(p + 1, end)
    if p < end and p[0] == 125:
        p += 1
    else:
        while True:
            if p >= end or p[0] != 34:
                return None
            key = p + 1
            p = key
            while True:
                p += rk_plain_run(p, end)  # the last few bytes one at a time
                if p >= end or p[0] == 92 or p[0] < 32 or p[0] >= 128:
                    return None  # an escaped or unusual name: orjson decides
                if p[0] == 34:
                    break
                p += 1
            key_len = p - key
            p = _ws(p + 1, end)
            if p >= end or p[0] != 58:
                return None
            p = _ws(p + 1, end)
            if p >= end:
                return None
            field = _field(key, key_len)
            if field == _EXT_FIELDS:
                if p[0] != 123:
                    return None
                ext = _ext_fields(&p, end, cache)
                if ext is None:
                    return None
            elif p[0] == 34:
                if field == _CODE or field == _OPAQUE or field == _FLAG or field == _VERSION:
                    return None  # a string where an integer belongs: refused there
                value = _string(&p, end, field != _OTHER, cache)
                if value is None:
                    return None
                if field == _LANGUAGE:
                    language = value
                elif field == _REMARK:
                    remark = value
            elif p[0] == 45 or 48 <= p[0] <= 57:
                if field == _LANGUAGE or field == _REMARK:
                    return None
                value = _integer(&p, end)
                if value is None:
                    return None
                if field == _CODE:
                    code = value
                elif field == _OPAQUE:
                    opaque = value
                elif field == _FLAG:
                    flag = value
                elif field == _VERSION:
                    version = value
            else:
                return None  # true, false, null, arrays, objects: orjson decides
            p = _ws(p, end)
            if p < end and p[0] == 44:
                p = _ws(p + 1, end)
                continue
            if p < end and p[0] == 125:
                p += 1
                break
            return None
    if _ws(p, end) != end or code is None:
        return None
    if type(ext) is tuple and flag & _RESPONSE:
        ext = _as_dict((<tuple>ext)[0], (<tuple>ext)[1])  # kept as they are for requests only
    elif ext is None:
        ext = {}
    return _scanned(code, opaque, flag, language, version, remark, ext, body)
