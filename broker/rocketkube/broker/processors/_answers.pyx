# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The answers of a stored run that waits for nothing, compiled: :func:`stored_answers`
does what ``send_answers.stored_answers`` does, making each templated response by
storing its three slots instead of running ``ResponseTemplate.response`` and
``TemplatedResponse.__init__``. ``tests/broker/test_answers_kernel.py`` holds the two to
the same answers, latencies and tallies.
"""

from rocketkube.common.remoting.frame import TemplatedResponse as _TemplatedResponse

include "_slotted.pxi"

cdef Slotted _ANSWER = Slotted(_TemplatedResponse, ("code", "_template", "_values"))


cdef inline object _answer(object code, object template, tuple values):
    """``template.response(*values)``: its three slots stored."""
    answer = _ANSWER.new()
    _ANSWER.set(answer, 0, code)
    _ANSWER.set(answer, 1, template)
    _ANSWER.set(answer, 2, values)
    return answer


cdef inline tuple _tuple(object value):
    """``value``, a named tuple (``Ready``, ``AppendResult``), read by position."""
    if not isinstance(value, tuple):
        raise TypeError(f"expected a named tuple, got {type(value).__name__}")
    return <tuple>value


def stored_answers(appended, list ready, list replies, template, double now, list latencies,
                   dict tally):
    """``send_answers.stored_answers``, compiled."""
    cdef Py_ssize_t at = 0, count
    cdef list counts
    code = template.code
    cdef bint direct = type(template).response is _TEMPLATE_RESPONSE
    last_started = latency = None
    cdef Py_ssize_t i
    for entry in ready:
        place, one = _tuple(entry)
        i = place
        if i < 0:
            i += len(replies)
        if not 0 <= i < len(replies):  # as the list itself would (unchecked below)
            raise IndexError("list assignment index out of range")
        messages, topic, queue_id, body_bytes, _, started = _tuple(one)
        count = len(messages)
        head = appended[at]
        if count == 1:
            msg_id = _tuple(head)[3]
        else:
            msg_id = ",".join([_tuple(a)[3] for a in appended[at : at + count]])
        values = (msg_id, queue_id, _tuple(head)[2])
        if direct:
            replies[i] = _answer(code, template, values)
        else:
            replies[i] = template.response(*values)
        if started is not last_started:  # a run's sends share their start: one float
            last_started = started
            latency = now - <double>started
        latencies.append(latency)
        found = tally.get(topic)
        if found is None:
            tally[topic] = [count, body_bytes]
        else:
            counts = <list>found
            counts[0] += count
            counts[1] += body_bytes
        at += count


def waited_answers(appended, list firsts, list ends, list queue_ids, list started, template,
                   double now, list latencies):
    """``send_answers.waited_answers``, compiled."""
    cdef Py_ssize_t i, count = len(firsts), first, end
    cdef list answers = []
    if len(ends) != count or len(queue_ids) != count or len(started) != count:
        raise ValueError("zip() arguments have different lengths")  # as strict=True
    code = template.code
    cdef bint direct = type(template).response is _TEMPLATE_RESPONSE
    for i in range(count):
        first = firsts[i]
        end = ends[i]
        head = _tuple(appended[first])
        if end - first == 1:
            msg_id = head[3]
        else:
            msg_id = ",".join([_tuple(a)[3] for a in appended[first:end]])
        values = (msg_id, queue_ids[i], head[2])
        if direct:
            answers.append(_answer(code, template, values))
        else:
            answers.append(template.response(*values))
        latencies.append(now - <double>started[i])
    return answers


from rocketkube.common.remoting.frame import ResponseTemplate as _ResponseTemplate

_TEMPLATE_RESPONSE = _ResponseTemplate.response
