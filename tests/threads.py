"""Running test work on two threads at once, collecting what each raised."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_together(work: Callable[[int], None], workers: int = 2) -> list[BaseException]:
    """Run ``work(worker)`` on ``workers`` threads started together; return their errors."""
    errors: list[BaseException] = []
    start = threading.Barrier(workers)

    def run(worker: int) -> None:
        start.wait()
        try:
            work(worker)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(worker,)) for worker in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors
