"""wheel's errors as gRPC statuses and back: the one mapping server and SDK share.

The server answers every failure with a status code and a message naming the
field and the reason; trailing metadata carries the error's kind (and the
field of an invalid argument) so that the SDK raises the same exception type
the server raised, with the same attributes.

    InvalidArgument    INVALID_ARGUMENT     (wheel-field: the field)
    NotFound           NOT_FOUND
    VersionConflict    ABORTED              (an optimistic-concurrency loss, AIP-154)
    InvalidTransition  FAILED_PRECONDITION
    Conflict           ALREADY_EXISTS
    Unauthenticated    UNAUTHENTICATED
    PermissionDenied   PERMISSION_DENIED
    StoreUnavailable / CoordinatorUnavailable   UNAVAILABLE (retry: nothing happened)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2

from wheel.errors import (
    Conflict,
    CoordinatorUnavailable,
    DeadlineExceeded,
    InvalidArgument,
    InvalidTransition,
    NameTaken,
    NotFound,
    PermissionDenied,
    StoreUnavailable,
    Unauthenticated,
    Unavailable,
    VersionConflict,
    WheelError,
)

KIND = "wheel-error"
FIELD = "wheel-field"


@dataclass(frozen=True, slots=True)
class Status:
    code: grpc.StatusCode
    message: str
    metadata: tuple[tuple[str, str], ...]
    details: tuple[Message, ...] = ()
    """google.rpc error details (BadRequest, ResourceInfo, ErrorInfo), for every client."""

    def rich(self) -> status_pb2.Status:
        """The standard google.rpc.Status of this answer: what Go, TypeScript and grpcurl
        clients decode (the `grpc-status-details-bin` trailer, Connect's error details)."""
        packed = []
        for detail in self.details:
            holder = any_pb2.Any()
            holder.Pack(detail)
            packed.append(holder)
        return status_pb2.Status(code=self.code.value[0], message=self.message, details=packed)

    def trailers(self) -> tuple[tuple[str, str | bytes], ...]:
        """wheel's own trailers (the SDK reads them) and the standard rich status."""
        return (*self.metadata, ("grpc-status-details-bin", self.rich().SerializeToString()))


def _details(error: WheelError) -> tuple[Message, ...]:
    """The standard details an error carries beside wheel's trailers."""
    info = error_details_pb2.ErrorInfo(reason=_reason(type(error).__name__), domain="wheel")
    if isinstance(error, InvalidArgument):
        violation = error_details_pb2.BadRequest.FieldViolation(
            field=error.field, description=error.reason
        )
        return (error_details_pb2.BadRequest(field_violations=[violation]), info)
    if isinstance(error, NotFound):
        resource = error_details_pb2.ResourceInfo(
            resource_type=str(error.kind), resource_name=str(error.ident), description=str(error)
        )
        return (resource, info)
    if isinstance(error, VersionConflict):
        info.metadata["expected"] = str(error.expected)
        info.metadata["current"] = str(error.current)
    return (info,)


def _reason(name: str) -> str:
    """`VersionConflict` -> `VERSION_CONFLICT` (ErrorInfo's reason is UPPER_SNAKE_CASE)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def to_status(error: WheelError) -> Status | None:
    """The status an error is answered with; None for an error that is a server fault."""
    kind = type(error).__name__
    if isinstance(error, InvalidArgument):
        return Status(
            grpc.StatusCode.INVALID_ARGUMENT,
            str(error),
            ((KIND, kind), (FIELD, error.field)),
            _details(error),
        )
    if isinstance(error, StoreUnavailable | CoordinatorUnavailable):
        # The driver's text names hosts and settings: callers get a plain sentence
        # (the server logs the detail).
        what = "the database" if isinstance(error, StoreUnavailable) else "etcd"
        message = f"{what} is unavailable now; calls that are safe to repeat may be retried"
        info = error_details_pb2.ErrorInfo(reason=_reason(kind), domain="wheel")
        return Status(grpc.StatusCode.UNAVAILABLE, message, ((KIND, kind),), (info,))
    code = _CODES.get(type(error))
    if code is None:
        for base, base_code in _CODES.items():
            if isinstance(error, base):
                code = base_code
                break
    if code is None:
        return None
    return Status(code, str(error), ((KIND, kind), *_attributes(error)), _details(error))


def _attributes(error: WheelError) -> tuple[tuple[str, str], ...]:
    """The attributes an SDK needs to raise the same error with the same fields."""
    names: tuple[str, ...] = ()
    if isinstance(error, NotFound):
        names = ("kind", "ident")
    elif isinstance(error, VersionConflict):
        names = ("kind", "ident", "expected", "current")
    elif isinstance(error, InvalidTransition):
        names = ("kind", "ident", "state", "operation")
    elif isinstance(error, NameTaken):
        names = ("name", "field")
    # Metadata values are printable ASCII: anything else (a job's name) is percent-encoded.
    return tuple((f"wheel-{name}", quote(str(getattr(error, name)), safe=_SAFE)) for name in names)


_SAFE = " !\"#$&'()*+,-./:;<=>?@[]^_`{|}~"
"""Printable ASCII left as it is in a trailer value (all but '%', which escapes)."""

_CODES: dict[type[WheelError], grpc.StatusCode] = {
    NotFound: grpc.StatusCode.NOT_FOUND,
    VersionConflict: grpc.StatusCode.ABORTED,
    InvalidTransition: grpc.StatusCode.FAILED_PRECONDITION,
    Conflict: grpc.StatusCode.ALREADY_EXISTS,
    Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
    StoreUnavailable: grpc.StatusCode.UNAVAILABLE,
    CoordinatorUnavailable: grpc.StatusCode.UNAVAILABLE,
    Unavailable: grpc.StatusCode.UNAVAILABLE,
}


class RemoteError(WheelError):
    """The server failed in a way it did not describe (INTERNAL, UNKNOWN, ...)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code


def from_status(
    code: grpc.StatusCode, message: str, metadata: Mapping[str, str] | None = None
) -> WheelError:
    """The exception a status stands for, as the server raised it (best effort for others)."""
    metadata = metadata or {}
    kind = metadata.get(KIND, "")
    if code is grpc.StatusCode.INVALID_ARGUMENT:
        field = metadata.get(FIELD, "request")
        prefix = f"{field}: "
        return InvalidArgument(field, message.removeprefix(prefix))
    rebuilt = _rebuilt(code, kind, message, metadata)
    if rebuilt is not None:
        return rebuilt
    if code is grpc.StatusCode.NOT_FOUND:
        return _described(NotFound, message)
    if code is grpc.StatusCode.ABORTED and kind == "VersionConflict":
        return _described(VersionConflict, message)
    if code is grpc.StatusCode.FAILED_PRECONDITION:
        return _described(InvalidTransition, message)
    if code is grpc.StatusCode.ALREADY_EXISTS:
        return Conflict(message)
    if code is grpc.StatusCode.UNAUTHENTICATED:
        return Unauthenticated(message)
    if code is grpc.StatusCode.PERMISSION_DENIED:
        return PermissionDenied(message)
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return DeadlineExceeded(f"{code.name}: {message}")
    if code is grpc.StatusCode.UNAVAILABLE:
        return Unavailable(f"{code.name}: {message}")
    return RemoteError(code, message)


def _rebuilt(
    code: grpc.StatusCode, kind: str, message: str, metadata: Mapping[str, str]
) -> WheelError | None:
    """The error built with its own fields from the trailer, when it carries them all and
    they give back the server's very message (else None: the message alone is used)."""
    if code is grpc.StatusCode.ALREADY_EXISTS and kind == "NameTaken":
        try:
            taken = NameTaken(unquote(metadata["wheel-name"]), unquote(metadata["wheel-field"]))
        except KeyError:
            return None
        return taken if str(taken) == message else None
    try:
        attribute = {name: unquote(metadata[f"wheel-{name}"]) for name in ("kind", "ident")}
        error: WheelError
        if code is grpc.StatusCode.NOT_FOUND:
            error = NotFound(attribute["kind"], attribute["ident"])
        elif code is grpc.StatusCode.ABORTED and kind == "VersionConflict":
            expected, current = int(metadata["wheel-expected"]), int(metadata["wheel-current"])
            error = VersionConflict(attribute["kind"], attribute["ident"], expected, current)
        elif code is grpc.StatusCode.FAILED_PRECONDITION:
            state, operation = (
                unquote(metadata["wheel-state"]),
                unquote(metadata["wheel-operation"]),
            )
            error = InvalidTransition(attribute["kind"], attribute["ident"], state, operation)
        else:
            return None
    except (KeyError, ValueError):
        return None
    return error if str(error) == message else None


def _described(cls: type[WheelError], message: str) -> WheelError:
    """An instance of `cls` carrying the server's message, without its constructor's args."""
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    return error
