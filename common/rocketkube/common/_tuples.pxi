# Included (``include "_tuples.pxi"``) by the compiled modules that make named tuples.
#
# A named tuple's ``__new__`` is a Python function that calls ``tuple.__new__(cls,
# values)``; called from C, that costs a Python frame, and ``tuple.__new__`` called as a
# method an argument slice and two calls. ``new_named`` runs the same constructor
# (``tuple``'s ``tp_new``) directly.


cdef extern from *:
    """
    static PyObject *rk_new_named(PyObject *cls, PyObject *values) {
        PyObject *args = PyTuple_Pack(1, values);
        PyObject *made;
        if (args == NULL)
            return NULL;
        made = PyTuple_Type.tp_new((PyTypeObject *)cls, args, NULL);
        Py_DECREF(args);
        return made;
    }
    """
    object rk_new_named(object cls, tuple values)


cdef inline object new_named(object cls, tuple values):
    """``tuple.__new__(cls, values)``: an instance of the named tuple ``cls`` (which the
    caller checked with :func:`named_tuple` once) holding ``values``."""
    return rk_new_named(cls, values)


cdef object named_tuple(object cls):
    """``cls``, refused (TypeError) unless it is a subclass of tuple."""
    if not (isinstance(cls, type) and issubclass(cls, tuple)):
        raise TypeError(f"{cls!r} is not a tuple type")
    return cls
