# Values that must differ between any two runs, whichever engine ran them: a warm engine must
# not hand every program the same seeds.
import json
import os
import random
import tempfile
import uuid

import numpy

fd, temp_name = tempfile.mkstemp()
os.close(fd)
print(json.dumps({
    "random.random": random.random(),
    "numpy.random.random": float(numpy.random.random()),
    "uuid.uuid4": str(uuid.uuid4()),
    "tempfile.mkstemp": temp_name,
    "os.urandom": os.urandom(8).hex(),
    "hash(str)": hash("the same string in every run"),
}))
