# cython: language_level=3, boundscheck=False, wraparound=False
"""The dispatcher's count of a run's replies, compiled: :func:`count_replies` does what
``dispatch.count_replies`` does, counting runs of equal keys before touching the tally
(a run of pipelined sends has one key). ``tests/common/test_tally_kernel.py`` holds the
two to the same tallies.
"""

from rocketkube.common.remoting.command import RemotingCommand as _RemotingCommand

include "_slotted.pxi"

cdef Slotted _CODE = Slotted(_RemotingCommand, ("code",))


cdef inline object _code(object command):
    """``command.code``, read from its slot: subclasses keep their bases' slots where
    they are (an unset one is read as the attribute, which may set it)."""
    if _CODE.has(command, 0):
        return _CODE.get(command, 0)
    return command.code


def count_replies(run, replies, dict tally):
    """``dispatch.count_replies``, compiled: a run's keys compared field by field, the
    ``(request code, reply code)`` tuple made once per run of equal keys."""
    cdef Py_ssize_t at, count = len(run), same = 0
    cdef list rest = []
    if len(replies) != count:
        raise ValueError("zip() arguments have different lengths")  # as strict=True
    last_code = last_answer = None
    for at in range(count):
        request = run[at]
        reply = replies[at]
        if reply is not None and not isinstance(reply, _RemotingCommand):
            rest.append(at)
            continue
        code = _code(request) if isinstance(request, _RemotingCommand) else request.code
        answer = None if reply is None else _code(reply)
        if (same and (code is last_code or code == last_code)
                and (answer is last_answer or answer == last_answer)):
            same += 1
            continue
        if same:
            key = (last_code, last_answer)
            tally[key] = tally.get(key, 0) + same
        last_code = code
        last_answer = answer
        same = 1
    if same:
        key = (last_code, last_answer)
        tally[key] = tally.get(key, 0) + same
    return rest
