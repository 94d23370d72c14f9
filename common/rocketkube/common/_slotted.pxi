# Included (``include "_slotted.pxi"``) by the compiled accelerators that build instances
# of slotted classes (``@dataclass(slots=True)``, ``__slots__``) or of named tuples: a Python
# ``__init__`` is a frame and an attribute store per field, a few microseconds per message on
# the hot path, and ``object.__new__``/``tuple.__new__`` called from C a method lookup and a
# call each; the type's own allocator (``tp_alloc``, what those two call) is neither.

from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF


cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        const char *name
        int type
        Py_ssize_t offset
        int flags
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member
    PyTypeObject PyMemberDescr_Type
    int T_OBJECT_EX


cdef extern from *:
    """
    static PyObject *rk_allocate(PyObject *cls, Py_ssize_t items) {
        PyTypeObject *type = (PyTypeObject *)cls;
        return type->tp_alloc(type, items);
    }
    """
    object rk_allocate(object cls, Py_ssize_t items)


cdef extern from "Python.h":
    bint PyType_FastSubclass(PyTypeObject *, unsigned long)
    bint PyType_Check(object)
    unsigned long Py_TPFLAGS_TUPLE_SUBCLASS
    void PyTuple_SET_ITEM(object, Py_ssize_t, object)


cdef inline object new_tuple(object cls, Py_ssize_t items):
    """An instance of the tuple subclass ``cls`` (a named tuple) of ``items`` items, all
    still NULL: the caller sets each with ``set_item`` before anything else runs, as
    ``tuple.__new__(cls, values)`` does."""
    if not PyType_Check(cls) or not PyType_FastSubclass(<PyTypeObject *>cls, Py_TPFLAGS_TUPLE_SUBCLASS):
        raise TypeError(f"{cls!r} is not a tuple type")
    return rk_allocate(cls, items)


cdef inline void set_item(object made, Py_ssize_t i, object value):
    """Item ``i`` of a tuple from ``new_tuple`` (a new reference to ``value``)."""
    Py_INCREF(value)
    PyTuple_SET_ITEM(made, i, value)


DEF MAX_SLOTS = 16


cdef class Slotted:
    """Makes instances of ``cls`` and stores and reads the slots ``names`` (by index, in
    order) straight at their offsets: what a slotted class's ``__init__`` and attribute
    access do, without running them. The offsets hold in a subclass too (it keeps its
    bases' slots where they are). Refuses (with TypeError) a name that is not a plain
    object slot of ``cls``."""

    cdef readonly object cls
    cdef Py_ssize_t offsets[MAX_SLOTS]

    def __init__(self, cls, tuple names):
        if len(names) > MAX_SLOTS:
            raise TypeError(f"{cls.__name__}: more than {MAX_SLOTS} slots")
        self.cls = cls
        for i, name in enumerate(names):
            descriptor = None
            for klass in cls.__mro__:
                if name in klass.__dict__:
                    descriptor = klass.__dict__[name]
                    break
            if (descriptor is None
                    or type(descriptor) is not <object>&PyMemberDescr_Type
                    or (<PyMemberDescrObject *>descriptor).d_member.type != T_OBJECT_EX):
                raise TypeError(f"{cls.__name__}.{name} is not a slot")
            self.offsets[i] = (<PyMemberDescrObject *>descriptor).d_member.offset

    cdef inline object new(self):
        """A new instance with every slot unset: the caller sets each (``set``) before it
        is used."""
        return rk_allocate(self.cls, 0)

    cdef inline void set(self, object instance, Py_ssize_t i, object value):
        """Store ``value`` in slot ``names[i]`` of ``instance`` (whose type the caller
        checked is ``cls`` or a subclass), as assigning the attribute does."""
        cdef PyObject **slot = <PyObject **>(<char *><PyObject *>instance + self.offsets[i])
        cdef PyObject *old = slot[0]
        Py_INCREF(value)
        slot[0] = <PyObject *>value
        Py_XDECREF(old)

    cdef inline bint has(self, object instance, Py_ssize_t i):
        """Whether slot ``names[i]`` of ``instance`` (``cls`` or a subclass) is set."""
        return (<PyObject **>(<char *><PyObject *>instance + self.offsets[i]))[0] != NULL

    cdef inline object get(self, object instance, Py_ssize_t i):
        """Slot ``names[i]`` of ``instance`` (whose type the caller checked is ``cls`` or a
        subclass);
        AttributeError when it was never set, as reading the attribute raises."""
        cdef PyObject *value = (<PyObject **>(<char *><PyObject *>instance + self.offsets[i]))[0]
        if value == NULL:
            raise AttributeError(i)
        return <object>value
