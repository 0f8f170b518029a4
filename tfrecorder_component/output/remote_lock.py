"""The lock of an output prefix on object storage (gs://, s3://): one run at a time.

An object store has no `flock`, but both stores decide a create-only write atomically
(Cloud Storage's `ifGenerationMatch=0`, S3's `If-None-Match: *`). A run into
`<output>` first creates `<output>/.tfrecorder-lock` that way, holding who it is
(`{"run": id, "host": ..., "pid": ..., "started": UTC time}`), and reads it back. A
second run finding the object there is refused before it deletes or writes anything, in
one line naming the prefix, the lock, the run holding it and what to do: wait for that
run to end, or, if it is dead, remove the lock with the command given
(`gcloud storage rm gs://.../.tfrecorder-lock`, `aws s3 rm s3://.../.tfrecorder-lock`).

A run removes its lock however it ends (success, failure, Ctrl-C or SIGTERM: its
`OutputSwap` releases it, the interrupt's clean-up included), and only while the lock
is still its own (read first; on gs:// the delete is conditional on the generation).
A run killed outright (SIGKILL, the OOM killer, a VM gone) leaves it: whether that run
still works cannot be told from elsewhere (a time limit would break a long run, a pid
means nothing on another machine or in another container), so the next run is refused
with the command, and the person who knows removes it. The run holding the lock checks
it is still its own (`confirm`) before every step that deletes or publishes, so a run
whose lock was removed and taken by another stops without touching that run's output.
"""
from __future__ import annotations

import datetime
import json
import logging
import os
import posixpath
import shlex
import socket
from typing import Any, Dict, Optional

from tfrecorder_component.errors import UsageError
from tfrecorder_component.io import storage

LOCK_NAME = '.tfrecorder-lock'  # at the top of an output prefix, while a run holds it
_TAKE_ATTEMPTS = 5  # a lock released between our create and our read: try again


def removal_command(uri: str) -> str:
  """The shell command that removes the object `uri` with the store's own command-line
  tool: `gcloud storage rm` for gs://, `aws s3 rm` for s3:// (with the endpoint of
  AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, as this run reached the store, where one is
  set: MinIO and other S3-compatible stores).

  Args:
    uri: A gs:// or s3:// object URI; quoted for a POSIX shell where it needs it.
  """
  if uri.startswith('s3://'):
    endpoint = os.environ.get('AWS_ENDPOINT_URL_S3') or os.environ.get('AWS_ENDPOINT_URL')
    where = f' --endpoint-url {shlex.quote(endpoint)}' if endpoint else ''
    return f'aws{where} s3 rm {shlex.quote(uri)}'
  return f'gcloud storage rm {shlex.quote(uri)}'


def _holder(data: Optional[bytes]) -> Dict[str, Any]:
  try:
    value = json.loads(data or b'')
  except ValueError:
    return {}
  return value if isinstance(value, dict) else {}


def describe(holder: Dict[str, Any]) -> str:
  """`run ID, pid N on HOST, started TIME` of a lock's content, or what of it is known.

  Args:
    holder: The lock object's JSON content ({} where it could not be read as such).
  """
  if not holder.get('run'):
    return 'a run its lock does not name'
  return (f'run {holder["run"]}, pid {holder.get("pid", "?")} on {holder.get("host", "?")}, '
          f'started {holder.get("started", "?")}')


class RemoteLock:
  """The lock object of `output_dir`, taken when constructed (see the module).

  Args:
    output_dir: The output prefix, a gs:// or s3:// URI without a trailing slash.
    run_id: The run's id, written in the lock (its staging prefix and `_SUCCESS` carry
      it too).

  Raises:
    UsageError: Another run holds the lock (the message says which, and the command
      that removes its lock if it is dead), or the store failed the request (its
      error in one line); nothing was written or deleted. An S3-compatible store that
      refuses the precondition (501) is not locked, with a warning, as a local file
      system without `flock` is not.
  """

  def __init__(self, output_dir: str, run_id: str):
    self.output_dir = output_dir
    self.uri = posixpath.join(output_dir, LOCK_NAME)
    self.run_id = run_id
    started = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    self._content = json.dumps({'run': run_id, 'host': socket.gethostname(),
                                'pid': os.getpid(),
                                'started': started.isoformat().replace('+00:00', 'Z')},
                               sort_keys=True).encode('utf-8')
    self._token: Optional[str] = None
    self.held = True  # False: a store that refuses the precondition; the run goes unlocked
    try:
      self._take()
    except NotImplementedError as e:
      logging.warning('Cannot lock %s (%s): a second run into it would not be detected.',
                      output_dir, e)
      self.held = False
      return
    except UsageError:
      raise
    except Exception as e:  # pylint: disable=broad-except  the store's own error, in one line
      raise UsageError(f'cannot take the lock {self.uri} of {output_dir}: {type(e).__name__}: '
                       f'{" ".join(str(e).split())} (nothing was changed)') from None
    self.confirm()  # read back: a store that ignored the precondition lets the last writer win

  def _take(self) -> None:
    for _ in range(_TAKE_ATTEMPTS):
      self._token = storage.create_if_absent(self.uri, self._content)
      if self._token is not None:
        return
      found = storage.read_if_present(self.uri)
      if found is None:
        continue  # released meanwhile
      if _holder(found.data).get('run') == self.run_id:  # the client retried our own create
        self._token = found.token
        return
      raise self._refusal(_holder(found.data))
    raise UsageError(f'{self.output_dir} is in use by other runs, one after another: its lock '
                     f'{self.uri} was taken and released {_TAKE_ATTEMPTS} times while '
                     'this run tried to take it; wait for them to end (nothing was changed)')

  def _refusal(self, holder: Dict[str, Any]) -> UsageError:
    return UsageError(
        f'{self.output_dir} is in use by another run ({describe(holder)}), which holds the '
        f'lock {self.uri}: wait for it to end, or, if that run is no longer running '
        f'(killed, or its machine gone), remove the lock with `{removal_command(self.uri)}` '
        'and run again (nothing was changed)')

  def confirm(self) -> None:
    """Checks the lock is still this run's (before a step that deletes or publishes).

    Raises:
      UsageError: It is gone or another run's: this run must not touch the prefix.
    """
    if not self.held:
      return
    found = storage.read_if_present(self.uri)
    if found is not None and _holder(found.data).get('run') == self.run_id:
      self._token = found.token
      return
    self._token = None  # not ours to remove
    whose = ('it is gone' if found is None
             else f'another run took it ({describe(_holder(found.data))})')
    raise UsageError(f'this run no longer holds the lock {self.uri} of {self.output_dir} '
                     f'({whose}: was it removed while the run worked?): the run stopped '
                     'before deleting or publishing anything there; run again once no '
                     'other run writes there')

  def holds(self) -> bool:
    """Whether the lock is still this run's (`confirm` without raising)."""
    try:
      self.confirm()
    except UsageError:
      return False
    return True

  def release(self) -> None:
    """Removes the lock if it is still this run's; a failure to remove it is logged, not
    raised (the run's outcome stands; the next run is refused with the removal
    command)."""
    try:
      if self._token is None:
        return
      found = storage.read_if_present(self.uri)
      if found is None or _holder(found.data).get('run') != self.run_id:
        return
      storage.delete_if_unchanged(self.uri, found.token)
    except Exception as e:  # pylint: disable=broad-except
      logging.warning('Cannot remove this run\'s lock %s (%s): remove it with `%s`',
                      self.uri, e, removal_command(self.uri))
    finally:
      self._token = None
