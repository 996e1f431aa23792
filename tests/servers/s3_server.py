"""moto's S3 server for the tests, with S3's atomic conditional writes.

moto's own `moto_server` serves requests on several threads and checks a
conditional PUT's If-Match / If-None-Match apart from storing the object, so
two writers racing on one condition can both win there (the conformance
suite's no-lost-update race lost one increment in 120 under load). S3 itself
decides such a race for one writer. This runs the same moto application with
its writes (PUT, POST, DELETE) taken one at a time; reads stay concurrent.

Usage: python s3_server.py HOST PORT   (moto from `.ci/setup`'s venv)
"""

import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import run_simple

moto = DomainDispatcherApplication(create_backend_app)
writes = threading.Lock()


def app(environ, start_response):
    if environ.get("REQUEST_METHOD") in ("PUT", "POST", "DELETE"):
        with writes:
            # The whole answer is made under the lock: the check and the store.
            return list(moto(environ, start_response))
    return moto(environ, start_response)


if __name__ == "__main__":
    host, port = sys.argv[1], int(sys.argv[2])
    run_simple(host, port, app, threaded=True, request_handler=MotoRequestHandler)
