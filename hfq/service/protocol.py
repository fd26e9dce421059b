"""The Arrow Flight SQL messages the service speaks, as protobuf classes.

Flight SQL's commands travel as ``google.protobuf.Any`` in a ``FlightDescriptor``'s ``cmd``
(or a ``Ticket``, or an action's body).  Their classes are built here, when the module is
imported, from a declaration of each message's fields -- names, numbers and types exactly as
in the Arrow repository's ``format/FlightSql.proto`` (and ``CancelFlightInfo`` of
``Flight.proto``) -- through the ``protobuf`` runtime's descriptor API: no code generator, no
generated file, nothing built at install time.  Enum fields are declared as ``int32`` (the
same varint on the wire) and embedded messages the service never looks into as ``bytes``
(the same length-delimited bytes on the wire).

Examples
--------
>>> cmd = MESSAGES["CommandStatementQuery"](query="SELECT 1")
>>> name, back = unpack(pack(cmd))
>>> name, back.query
('CommandStatementQuery', 'SELECT 1')
>>> unpack(b"not a message")                          # doctest: +ELLIPSIS
Traceback (most recent call last):
hfq.errors.QueryError: not a Flight SQL command ...
"""

from __future__ import annotations

from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from hfq.errors import QueryError

__all__ = ["CANCEL_CANCELLED", "CANCEL_NOT_CANCELLABLE", "MESSAGES", "PACKAGE",
           "TABLE_EXISTS_APPEND", "TABLE_NOT_EXIST_FAIL", "decode", "pack", "unpack"]

PACKAGE = "arrow.flight.protocol.sql"

_F = descriptor_pb2.FieldDescriptorProto
_TYPES = {"string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES, "bool": _F.TYPE_BOOL,
          "int32": _F.TYPE_INT32, "int64": _F.TYPE_INT64, "uint32": _F.TYPE_UINT32}

# message -> [(field, number, type, label)]; label "" (proto3 singular), "optional" (proto3
# optional: presence tracked), "repeated"; a type naming a message here is that message
_DECLARED: dict[str, list[tuple[str, int, str, str]]] = {
    "CommandGetSqlInfo": [("info", 1, "uint32", "repeated")],
    "CommandGetXdbcTypeInfo": [("data_type", 1, "int32", "optional")],
    "CommandGetCatalogs": [],
    "CommandGetDbSchemas": [("catalog", 1, "string", "optional"),
                            ("db_schema_filter_pattern", 2, "string", "optional")],
    "CommandGetTables": [("catalog", 1, "string", "optional"),
                         ("db_schema_filter_pattern", 2, "string", "optional"),
                         ("table_name_filter_pattern", 3, "string", "optional"),
                         ("table_types", 4, "string", "repeated"),
                         ("include_schema", 5, "bool", "")],
    "CommandGetTableTypes": [],
    "CommandGetPrimaryKeys": [("catalog", 1, "string", "optional"),
                              ("db_schema", 2, "string", "optional"),
                              ("table", 3, "string", "")],
    "CommandGetExportedKeys": [("catalog", 1, "string", "optional"),
                               ("db_schema", 2, "string", "optional"),
                               ("table", 3, "string", "")],
    "CommandGetImportedKeys": [("catalog", 1, "string", "optional"),
                               ("db_schema", 2, "string", "optional"),
                               ("table", 3, "string", "")],
    "CommandGetCrossReference": [("pk_catalog", 1, "string", "optional"),
                                 ("pk_db_schema", 2, "string", "optional"),
                                 ("pk_table", 3, "string", ""),
                                 ("fk_catalog", 4, "string", "optional"),
                                 ("fk_db_schema", 5, "string", "optional"),
                                 ("fk_table", 6, "string", "")],
    "ActionCreatePreparedStatementRequest": [("query", 1, "string", ""),
                                             ("transaction_id", 2, "bytes", "optional")],
    "ActionCreatePreparedStatementResult": [("prepared_statement_handle", 1, "bytes", ""),
                                            ("dataset_schema", 2, "bytes", ""),
                                            ("parameter_schema", 3, "bytes", "")],
    "ActionClosePreparedStatementRequest": [("prepared_statement_handle", 1, "bytes", "")],
    "ActionBeginTransactionRequest": [],
    "CommandStatementQuery": [("query", 1, "string", ""),
                              ("transaction_id", 2, "bytes", "optional")],
    "CommandStatementSubstraitPlan": [("plan", 1, "bytes", ""),
                                      ("transaction_id", 2, "bytes", "optional")],
    "TicketStatementQuery": [("statement_handle", 1, "bytes", "")],
    "CommandPreparedStatementQuery": [("prepared_statement_handle", 1, "bytes", "")],
    "CommandStatementUpdate": [("query", 1, "string", ""),
                               ("transaction_id", 2, "bytes", "optional")],
    "CommandPreparedStatementUpdate": [("prepared_statement_handle", 1, "bytes", "")],
    "TableDefinitionOptions": [("if_not_exist", 1, "int32", ""), ("if_exists", 2, "int32", "")],
    "CommandStatementIngest": [("table_definition_options", 1, "TableDefinitionOptions", ""),
                               ("table", 2, "string", ""),
                               ("schema", 3, "string", "optional"),
                               ("catalog", 4, "string", "optional"),
                               ("temporary", 5, "bool", ""),
                               ("transaction_id", 6, "bytes", "optional"),
                               ("options", 1000, "OptionsEntry", "repeated")],
    "OptionsEntry": [("key", 1, "string", ""), ("value", 2, "string", "")],
    "DoPutUpdateResult": [("record_count", 1, "int64", "")],
    "DoPutPreparedStatementResult": [("prepared_statement_handle", 1, "bytes", "optional")],
    "ActionCancelQueryRequest": [("info", 1, "bytes", "")],
    "ActionCancelQueryResult": [("result", 1, "int32", "")],
    # arrow.flight.protocol (Flight.proto), the action that cancels: its FlightInfo as bytes
    "CancelFlightInfoRequest": [("info", 1, "bytes", "")],
    "CancelFlightInfoResult": [("status", 1, "int32", "")],
}
_NESTED = {"TableDefinitionOptions": "CommandStatementIngest",
           "OptionsEntry": "CommandStatementIngest"}
_MAP_ENTRIES = {"OptionsEntry"}

# values of the enums the service answers with (FlightSql.proto / Flight.proto)
TABLE_NOT_EXIST_FAIL = 2
TABLE_EXISTS_APPEND = 2
CANCEL_CANCELLED = 1
CANCEL_NOT_CANCELLABLE = 3


def _message(name: str) -> descriptor_pb2.DescriptorProto:
    msg = descriptor_pb2.DescriptorProto(name=name)
    if name in _MAP_ENTRIES:
        msg.options.map_entry = True
    for field, number, kind, label in _DECLARED[name]:
        f = msg.field.add(name=field, number=number)
        if kind in _TYPES:
            f.type = _TYPES[kind]
        else:
            f.type = _F.TYPE_MESSAGE
            f.type_name = f".{PACKAGE}.{_NESTED[kind]}.{kind}" if kind in _NESTED else \
                f".{PACKAGE}.{kind}"
        f.label = _F.LABEL_REPEATED if label == "repeated" else _F.LABEL_OPTIONAL
        if label == "optional":   # proto3 optional: a synthetic one-of of its own
            f.proto3_optional = True
            f.oneof_index = len(msg.oneof_decl)
            msg.oneof_decl.add(name=f"_{field}")
    for nested, parent in _NESTED.items():
        if parent == name:
            msg.nested_type.append(_message(nested))
    return msg


def _build() -> dict[str, Any]:
    proto = descriptor_pb2.FileDescriptorProto(name="hfq/flight_sql.proto", package=PACKAGE,
                                               syntax="proto3")
    for name in _DECLARED:
        if name not in _NESTED:
            proto.message_type.append(_message(name))
    pool = descriptor_pool.DescriptorPool()   # private: never clashes with another copy
    pool.Add(proto)
    out = {}
    for name in _DECLARED:
        full = f"{PACKAGE}.{_NESTED[name]}.{name}" if name in _NESTED else f"{PACKAGE}.{name}"
        out[name] = message_factory.GetMessageClass(pool.FindMessageTypeByName(full))
    return out


MESSAGES: dict[str, Any] = _build()
"""Message name -> protobuf class (e.g. ``MESSAGES["CommandGetTables"]``)."""

_URL = "type.googleapis.com/"


def pack(message: Any) -> bytes:
    """``message`` wrapped in a ``google.protobuf.Any``, serialized (a command, a ticket, an
    action's result)."""
    wrapped = any_pb2.Any()
    wrapped.Pack(message)
    return bytes(wrapped.SerializeToString())


def unpack(data: bytes) -> tuple[str, Any]:
    """The name and message of a serialized ``Any`` holding a Flight SQL message; a
    :class:`~hfq.errors.QueryError` for anything else."""
    wrapped = any_pb2.Any()
    try:
        wrapped.ParseFromString(data)
    except DecodeError:
        raise QueryError("not a Flight SQL command (the bytes are not a protobuf Any)") from None
    url = wrapped.type_url
    name = url[len(_URL) + len(PACKAGE) + 1:] if url.startswith(f"{_URL}{PACKAGE}.") else ""
    cls = MESSAGES.get(name)
    if cls is None:
        raise QueryError(f"not a Flight SQL command this server knows: {url!r}")
    message = cls()
    try:
        message.ParseFromString(wrapped.value)
    except DecodeError:
        raise QueryError(f"a damaged {name} message") from None
    return name, message


def decode(name: str, data: bytes) -> Any:
    """A bare (not wrapped in ``Any``) serialized message of type ``name`` (an action's
    body)."""
    message = MESSAGES[name]()
    try:
        message.ParseFromString(data)
    except DecodeError:
        raise QueryError(f"a damaged {name} message") from None
    return message
