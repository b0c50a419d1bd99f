"""The load job as a file for ``spark-submit`` (which runs a script, not a module):

    spark-submit --master spark://HOST:7077 "$(python -c 'import jobs.submit; print(jobs.submit.__file__)')" \
        --topics A,B --output hdfs://nn/warehouse/events

The arguments after the file are ``kafkalog load``'s; the job runs in the session ``spark-submit``
configured (its master and settings).
"""

import os
import sys

if __name__ == "__main__":
    # run as a file, its folder comes first on sys.path: the job's modules must not pass for top-level ones
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    from jobs.load import main

    sys.exit(main())
