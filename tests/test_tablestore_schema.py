"""The stored form of a table's schema: explicit, versioned, refusing what it cannot read."""
import pytest

from regions.tablestore import OTSClient, OTSServiceError
from regions.tablestore.metadata import TableMeta, TableOptions
from regions.tablestore.schema import ATTRIBUTE, FORMAT, Schema

FORMAT_1 = {"names": ["uid", "oid"], "types": ["INTEGER", "STRING"], "auto_incr": None,
            "ttl": -1, "max_versions": 3, "deviation": 86400, "allow_update": True,
            "defined": [["name", "STRING"]]}


def test_round_trip_writes_every_field_with_the_format():
    schema = Schema(["uid", "oid"], ["INTEGER", "STRING"], None, max_versions=3,
                    defined=[("name", "STRING")])
    record = schema.to_json()
    assert record == dict(FORMAT_1, format=1)      # no indexes: readable by older versions
    assert Schema.from_json(record) == schema


def test_a_schema_with_indexes_is_written_as_format_2_and_read_back():
    index = {"name": "by_name", "type": "global", "columns": ["name"], "attributes": []}
    schema = Schema(["uid", "oid"], ["INTEGER", "STRING"], None, max_versions=3,
                    defined=[("name", "STRING")], indexes=[index])
    record = schema.to_json()
    assert record == dict(FORMAT_1, format=2, indexes=[index])
    assert Schema.from_json(record) == schema
    assert Schema.from_json(record).with_options(ttl=86400).indexes == [index]


def test_update_full_row_is_written_as_format_3_and_kept_through_option_changes():
    schema = Schema(["uid", "oid"], ["INTEGER", "STRING"], None, max_versions=3,
                    defined=[("name", "STRING")], update_full_row=True)
    record = schema.to_json()
    assert record == dict(FORMAT_1, format=FORMAT, indexes=[], update_full_row=True)
    assert FORMAT == 3 and Schema.from_json(record) == schema
    assert Schema.from_json(record).with_options(ttl=86400).update_full_row is True


def test_update_full_row_is_set_at_create_table_only(tmp_path):
    with OTSClient(None) as c:
        c.create_table(TableMeta("t", [("uid", "INTEGER")]), TableOptions(update_full_row=True))
        assert c.describe_table("t").table_options.update_full_row is True
        for value in (True, False):
            with pytest.raises(OTSServiceError) as e:
                c.update_table("t", TableOptions(max_version=2, update_full_row=value))
            assert "contain updateFullRow" in e.value.message
        assert c.describe_table("t").table_options.max_version == 1   # nothing changed


def test_a_record_from_before_the_format_number_reads_as_format_1():
    schema = Schema.from_json(dict(FORMAT_1))
    assert (schema.names, schema.max_versions, schema.defined) == (["uid", "oid"], 3, [("name", "STRING")])


@pytest.mark.parametrize("record, problem", [
    (dict(FORMAT_1, format=4), "format 4"),
    (dict(FORMAT_1, indexes=[]), "unknown fields indexes in format 1"),
    (dict(FORMAT_1, colour="red"), "unknown fields colour"),
    ({k: v for k, v in FORMAT_1.items() if k != "types"}, "no field 'types'"),
])
def test_what_this_version_cannot_read_is_refused_by_name(record, problem):
    with pytest.raises(OTSServiceError) as e:
        Schema.from_json(record, "orders")
    assert e.value.code == "OTSInternalServerError"
    assert "orders" in e.value.message and problem in e.value.message


def test_with_options_changes_only_what_is_given():
    schema = Schema(["uid"], ["INTEGER"], None, ttl=-1, max_versions=2)
    new = schema.with_options(ttl=86400)
    assert (new.ttl, new.max_versions, schema.ttl) == (86400, 2, -1)


def test_a_table_reopens_with_its_stored_schema_and_a_newer_format_is_refused(tmp_path):
    path = str(tmp_path / "store")
    with OTSClient(path) as c:
        c.create_table(TableMeta("orders", [("uid", "INTEGER")]), TableOptions(max_version=2))
        c.update_table("orders", TableOptions(time_to_live=86400 * 2, max_version=4))
        server = c._server
        attrs = dict(server.table_attributes("orders"))
        assert attrs[ATTRIBUTE]["format"] == 1
    with OTSClient(path) as c:
        options = c.describe_table("orders").table_options
        assert (options.max_version, options.time_to_live) == (4, 86400 * 2)
        attrs[ATTRIBUTE] = dict(attrs[ATTRIBUTE], format=FORMAT + 1)
        c._server.set_table_attributes("orders", attrs)
    with pytest.raises(OTSServiceError, match="orders: format %d" % (FORMAT + 1)):
        OTSClient(path)
