"""Copies of skptr files with their metadata or members changed, for the loading tests."""

import json
import zipfile

METADATA = "skptr.json"
NETWORK = "network.keras"


def members(path):
    """The members of the zip archive at ``path``, by name, in order."""
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def tampered(source, target, change=None, replace=None):
    """Copy the skptr file ``source`` to ``target``, changing its metadata or members.

    ``change`` edits the parsed ``skptr.json`` in place; ``replace`` maps member names
    to new contents (``None`` removes the member).
    """
    contents = members(source)
    if change is not None:
        metadata = json.loads(contents[METADATA])
        change(metadata)
        contents[METADATA] = json.dumps(metadata).encode()
    for name, data in (replace or {}).items():
        if data is None:
            del contents[name]
        else:
            contents[name] = data
    with zipfile.ZipFile(target, "w") as archive:
        for name, data in contents.items():
            archive.writestr(name, data)
    return target


def set_network_params(**values):
    """A ``change`` for :func:`tampered`: edit the hyperparameters the file's network was
    fitted with."""

    def change(metadata):
        for entry in metadata["state"]["network_params_"]["__dict__"]:
            if entry[0] in values:
                entry[1] = values[entry[0]]

    return change


def set_state(**values):
    """A ``change`` for :func:`tampered`: set fitted attributes."""
    return lambda metadata: metadata["state"].update(values)
