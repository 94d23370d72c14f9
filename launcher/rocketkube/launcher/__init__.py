"""rocketkube launcher: the ``rocketkube`` command and ``rocketkube local``.

- ``cli``    the dispatcher: finds the subcommands components publish (entry points)
- ``local``  ``rocketkube local``: a name server and a broker as child processes

It imports no server or client component (children are started through the command
line), and nothing imports it.
"""
