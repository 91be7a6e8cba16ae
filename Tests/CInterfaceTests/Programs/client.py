"""A Python app for the tests: client.py APP NAMESPACE

The same as client.c, through the openudid package: prints "value HEX",
"app UUID" and "origin ORIGIN", then participates and prints "change HEX" on
every change until SIGTERM ("closed" once closed); SIGUSR1 toggles its
opt-out.
"""
import queue
import signal
import sys

import openudid

app, namespace = sys.argv[1], sys.argv[2]
udid = openudid.OpenUDID(app, namespace=namespace, mirror="file")
print("value", udid.value(), flush=True)
print("app", udid.app_value(), flush=True)
print("origin", udid.report()["origin"], flush=True)

# The callback runs on a library thread; the main thread does the printing,
# as an app hands values to its own loop.
changes = queue.Queue()
orders = queue.Queue()
signal.signal(signal.SIGUSR1, lambda *_: orders.put("toggle"))
signal.signal(signal.SIGTERM, lambda *_: orders.put("quit"))
udid.participate(changes.put)
opted_out = False
while True:
    try:
        while True:
            print("change", changes.get_nowait(), flush=True)
    except queue.Empty:
        pass
    try:
        order = orders.get(timeout=0.01)
    except queue.Empty:
        continue
    if order == "quit":
        break
    opted_out = not opted_out
    udid.opt_out() if opted_out else udid.opt_in()
udid.close()
print("closed", flush=True)
