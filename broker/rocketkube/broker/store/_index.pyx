# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The index file's append of keys, compiled: :func:`put_many` does what
``IndexFile.put_many`` does (the file layout is drawn in ``index``), with the same bytes,
slots, counters and dirty pages. ``tests/broker/store/test_index_kernel.py`` holds the
two to the same files.
"""

from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer

from struct import error as _struct_error

include "_bigendian.pxi"


cdef extern from *:
    void __builtin_prefetch(const void *address, int write, int locality) nogil


cdef long long _INT_MAX = 0x7FFFFFFF
cdef int _PAGE_SHIFT = 12
cdef int _ENTRY_SIZE = 20


cdef inline long long _slot_pos(long long key_hash, long long slot_num) noexcept nogil:
    """The byte position of a key's slot in the table (Python's ``%``: never negative)."""
    return ((key_hash % slot_num + slot_num) % slot_num) * 4


cdef inline long long _int32(long long v) except? -1:
    if v < -2147483648 or v > 2147483647:
        raise _struct_error(f"int32 field out of range: {v}")
    return v


def put_many(index_file, list entries, Py_ssize_t start):
    """``IndexFile.put_many``, compiled: add ``(keyHash, phyOffset, storeTimestamp)``
    entries from ``entries[start]`` until the file's allocated entries are used up; the
    first not added."""
    cdef Py_buffer slots, mapped
    cdef Py_ssize_t base = index_file._slot_base, at = start, stop = len(entries)
    cdef Py_ssize_t slot_num = index_file.slot_num, entries_at = index_file.entries_at
    cdef long long number = index_file.count, limit = index_file.writable_num
    cdef long long used = index_file.slots_used, begin_ts = index_file.begin_ts
    cdef long long key_hash, phys, store_ts, head, diff, slot_pos, entry_pos
    cdef Py_ssize_t i
    cdef unsigned char *p
    dirty = index_file._dirty
    tracked = base == 0 and len(dirty) <= index_file._whole_flush_pages
    if slot_num <= 0:
        raise ZeroDivisionError("integer modulo by zero")
    PyObject_GetBuffer(index_file._slots, &slots, PyBUF_WRITABLE)
    try:
        PyObject_GetBuffer(index_file.mapped.mm, &mapped, PyBUF_WRITABLE)
        try:
            # The slot table is tens of MB and keys hash all over it: each slot read is a
            # cache and TLB miss. Asked for together first, the misses overlap instead of
            # each stalling the loop below in turn.
            for i in range(start, stop):
                slot_pos = _slot_pos((<tuple>entries[i])[0], slot_num)
                if base + slot_pos + 4 <= slots.len:
                    __builtin_prefetch(<unsigned char *>slots.buf + base + slot_pos, 1, 3)
            while at < stop and number < limit:
                key_hash, phys, store_ts = <tuple>entries[at]
                slot_pos = _slot_pos(key_hash, slot_num)
                if base + slot_pos + 4 > slots.len:
                    raise _struct_error("slot out of the table")
                head = _get32(<unsigned char *>slots.buf + base + slot_pos)
                if head <= 0 or head >= number:
                    head = 0
                    used += 1
                if number <= 1:
                    index_file.begin_ts = store_ts
                    begin_ts = store_ts
                    index_file.begin_phys = phys
                diff = (store_ts - begin_ts) // 1000 if begin_ts > 0 else 0
                diff = 0 if diff < 0 else _INT_MAX if diff > _INT_MAX else diff
                entry_pos = entries_at + number * _ENTRY_SIZE
                if entry_pos + _ENTRY_SIZE > mapped.len:
                    raise _struct_error("entry out of the file")
                p = <unsigned char *>mapped.buf + entry_pos
                _put32(p, _int32(key_hash))
                _put64(p + 4, phys)
                _put32(p + 12, diff)
                _put32(p + 16, head)
                _put32(<unsigned char *>slots.buf + base + slot_pos, _int32(number))
                if tracked:
                    dirty.add(slot_pos >> _PAGE_SHIFT)
                number += 1
                at += 1
        finally:
            PyBuffer_Release(&mapped)
    finally:
        PyBuffer_Release(&slots)
    if at > start:
        _key, index_file.end_phys, index_file.end_ts = entries[at - 1]
    index_file.count = number
    index_file.slots_used = used
    return at
