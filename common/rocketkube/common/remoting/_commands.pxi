# Part of ``_frames.pyx`` (included there): the command types it owns, ``RemotingCommand`` and
# ``TemplatedResponse``, with the factory the scan builds its commands with.

cdef object _UNGIVEN = object()  # ext_fields not given: a new dict, as the dataclass's factory


cdef class RemotingCommand:
    """``command.PyRemotingCommand`` compiled: the same fields, methods, equality and
    repr. The scan below may make one with its extFields still as :attr:`header_names`
    (a str of one letter each) and :attr:`header_values` (a list), the dict made when
    ``ext_fields`` is first read (``header_values`` is None from then on)."""

    cdef public object code, opaque, flag, language, version, remark, body, serialize_type
    cdef object _ext
    cdef readonly object header_names
    cdef readonly object header_values

    def __init__(self, code, opaque=0, flag=0, language="JAVA", version=_SERVER_VERSION,
                 remark=None, ext_fields=_UNGIVEN, body=b"", serialize_type=_JSON_TYPE):
        self.code = code
        self.opaque = opaque
        self.flag = flag
        self.language = language
        self.version = version
        self.remark = remark
        self._ext = {} if ext_fields is _UNGIVEN else ext_fields
        self.body = body
        self.serialize_type = serialize_type
        self.header_names = ""
        self.header_values = None

    @property
    def ext_fields(self):
        if self.header_values is not None:
            self._ext = _as_dict(self.header_names, self.header_values)
            self.header_values = None
        return self._ext

    @ext_fields.setter
    def ext_fields(self, value):
        self._ext = value
        self.header_values = None

    @property
    def is_response(self):
        return bool(self.flag & _RESPONSE)

    @property
    def is_oneway(self):
        return bool(self.flag & _ONEWAY)

    @classmethod
    def request(cls, code, ext_fields=None, body=b"", *, oneway=False, language="PYTHON"):
        return cls(code=code, flag=_ONEWAY if oneway else 0,
                   ext_fields=ext_fields if ext_fields is not None else {}, body=body,
                   language=language)

    @classmethod
    def response(cls, code=_SUCCESS, remark=None, ext_fields=None, body=b""):
        """A response; the dispatcher fills in the opaque of the request it answers."""
        return cls(code=code, flag=_RESPONSE, remark=remark,
                   ext_fields=ext_fields if ext_fields is not None else {}, body=body)

    def body_bytes(self):
        return self.body if isinstance(self.body, bytes) else bytes(self.body)

    def _fields(self):
        return (self.code, self.opaque, self.flag, self.language, self.version, self.remark,
                self.ext_fields, self.body, self.serialize_type)

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() == (<RemotingCommand>other)._fields()

    def __ne__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() != (<RemotingCommand>other)._fields()

    __hash__ = None

    def __repr__(self):
        return (f"{type(self).__qualname__}(code={self.code!r}, opaque={self.opaque!r}, "
                f"flag={self.flag!r}, language={self.language!r}, version={self.version!r}, "
                f"remark={self.remark!r}, ext_fields={self.ext_fields!r}, body={self.body!r}, "
                f"serialize_type={self.serialize_type!r})")

    def __reduce__(self):
        return (type(self), self._fields())


cdef RemotingCommand _scanned(object code, object opaque, object flag, object language,
                              object version, object remark, object ext, object body):
    """A command of the scan: ``ext`` is the extFields dict, or ``(names, values)``."""
    cdef RemotingCommand made = RemotingCommand.__new__(RemotingCommand)
    made.code = code
    made.opaque = opaque
    made.flag = flag
    made.language = language
    made.version = version
    made.remark = remark
    made.body = body
    made.serialize_type = _JSON_TYPE
    if type(ext) is tuple:
        made._ext = None
        made.header_names = (<tuple>ext)[0]
        made.header_values = (<tuple>ext)[1]
    else:
        made._ext = ext
        made.header_names = ""
        made.header_values = None
    return made


cdef class TemplatedResponse(RemotingCommand):
    """``template.PyTemplatedResponse`` compiled: a response of a ``ResponseTemplate``
    and the values of its variable extFields, whose ``ext_fields`` dict is made when first
    read; the connection writes its JSON frame from the template's parts."""

    cdef readonly object template
    cdef readonly tuple values

    def __init__(self, template, tuple values):
        self.code = template.code
        self.opaque = 0
        self.flag = _RESPONSE
        self.language = "JAVA"
        self.version = _SERVER_VERSION
        self.remark = None
        self._ext = None
        self.body = b""
        self.serialize_type = _JSON_TYPE
        self.header_names = ""
        self.header_values = None
        self.template = template
        self.values = values

    @property
    def ext_fields(self):
        if self._ext is None:
            ext = dict(self.template.fixed)
            ext.update(zip(self.template.variable, map(str, self.values), strict=True))
            self._ext = ext
        return self._ext

    @ext_fields.setter
    def ext_fields(self, value):
        self._ext = value

    def json_frame(self, opaque):
        """The whole frame (length field included) answering the request ``opaque``."""
        header = (self.template.header % (*self.values, opaque)).encode()
        return _HEAD.pack(4 + len(header), len(header)) + header

    def __reduce__(self):
        return (type(self), (self.template, self.values))
