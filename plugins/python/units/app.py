"""units: example toolhost plugin in Python. Converts between units of
measurement, so that a model does not recall conversion factors from memory.

Tools:
    convert_units   a value from one unit to another (length, area, volume, mass,
                    time, speed, data, energy, pressure, temperature)
    list_units      the units it knows, by dimension, with their spellings

Built into a component by componentize-py (see plugins/python/build.sh):
componentize-py generates the `wit_world` bindings for wit/v0.1.0 and this
module's `Tools` class implements the exported `tools` interface.
"""

import difflib
import json
import math

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log, types

# dimension -> {canonical unit: (factor to the dimension's base unit, description, aliases)}
# Temperature is affine and handled apart; its factors are unused.
UNITS = {
    "length": {
        "nm": (1e-9, "nanometre", ["nanometer", "nanometers", "nanometres"]),
        "um": (1e-6, "micrometre", ["µm", "micron", "microns", "micrometer", "micrometers"]),
        "mm": (1e-3, "millimetre", ["millimeter", "millimeters", "millimetres"]),
        "cm": (1e-2, "centimetre", ["centimeter", "centimeters", "centimetres"]),
        "m": (1.0, "metre", ["meter", "meters", "metres"]),
        "km": (1e3, "kilometre", ["kilometer", "kilometers", "kilometres"]),
        "in": (0.0254, "inch", ["inch", "inches", '"']),
        "ft": (0.3048, "foot", ["foot", "feet", "'"]),
        "yd": (0.9144, "yard", ["yard", "yards"]),
        "mi": (1609.344, "mile", ["mile", "miles"]),
        "nmi": (1852.0, "nautical mile", ["nautical mile", "nautical miles"]),
        "au": (149597870700.0, "astronomical unit", ["astronomical unit"]),
        "ly": (9460730472580800.0, "light-year", ["light year", "light-year", "light years"]),
    },
    "area": {
        "mm2": (1e-6, "square millimetre", ["mm²", "sq mm"]),
        "cm2": (1e-4, "square centimetre", ["cm²", "sq cm"]),
        "m2": (1.0, "square metre", ["m²", "sq m", "square meter", "square meters"]),
        "ha": (1e4, "hectare", ["hectare", "hectares"]),
        "km2": (1e6, "square kilometre", ["km²", "sq km"]),
        "in2": (0.00064516, "square inch", ["in²", "sq in"]),
        "ft2": (0.09290304, "square foot", ["ft²", "sq ft", "square feet"]),
        "yd2": (0.83612736, "square yard", ["yd²", "sq yd"]),
        "acre": (4046.8564224, "acre", ["acres", "ac"]),
        "mi2": (2589988.110336, "square mile", ["mi²", "sq mi", "square miles"]),
    },
    "volume": {
        "ml": (1e-3, "millilitre", ["mL", "milliliter", "milliliters", "cm3", "cc"]),
        "cl": (1e-2, "centilitre", ["cL", "centiliter"]),
        "dl": (1e-1, "decilitre", ["dL", "deciliter"]),
        "l": (1.0, "litre", ["L", "liter", "liters", "litres"]),
        "m3": (1e3, "cubic metre", ["m³", "cubic meter", "cubic meters"]),
        "tsp": (0.00492892159375, "US teaspoon", ["teaspoon", "teaspoons"]),
        "tbsp": (0.01478676478125, "US tablespoon", ["tablespoon", "tablespoons"]),
        "fl_oz": (0.0295735295625, "US fluid ounce", ["fl oz", "fluid ounce", "fluid ounces"]),
        "cup": (0.2365882365, "US cup", ["cups"]),
        "pt": (0.473176473, "US pint", ["pint", "pints"]),
        "qt": (0.946352946, "US quart", ["quart", "quarts"]),
        "gal": (3.785411784, "US gallon", ["gallon", "gallons", "us gal"]),
        "imp_gal": (4.54609, "imperial gallon", ["imperial gallon", "uk gal"]),
        "ft3": (28.316846592, "cubic foot", ["ft³", "cubic foot", "cubic feet"]),
    },
    "mass": {
        "mg": (1e-6, "milligram", ["milligram", "milligrams"]),
        "g": (1e-3, "gram", ["gram", "grams"]),
        "kg": (1.0, "kilogram", ["kilogram", "kilograms", "kilo", "kilos"]),
        "t": (1e3, "tonne", ["tonne", "tonnes", "metric ton"]),
        "oz": (0.028349523125, "ounce (avoirdupois)", ["ounce", "ounces"]),
        "lb": (0.45359237, "pound (avoirdupois)", ["lbs", "pound", "pounds"]),
        "st": (6.35029318, "stone", ["stone", "stones"]),
        "short_ton": (907.18474, "US short ton", ["short ton", "us ton"]),
    },
    "time": {
        "ns": (1e-9, "nanosecond", ["nanosecond", "nanoseconds"]),
        "us": (1e-6, "microsecond", ["µs", "microsecond", "microseconds"]),
        "ms": (1e-3, "millisecond", ["millisecond", "milliseconds"]),
        "s": (1.0, "second", ["sec", "secs", "second", "seconds"]),
        "min": (60.0, "minute", ["minute", "minutes", "mins"]),
        "h": (3600.0, "hour", ["hr", "hrs", "hour", "hours"]),
        "d": (86400.0, "day", ["day", "days"]),
        "wk": (604800.0, "week", ["week", "weeks"]),
        "yr": (31557600.0, "Julian year (365.25 days)", ["year", "years"]),
    },
    "speed": {
        "m/s": (1.0, "metre per second", ["mps", "meters per second"]),
        "km/h": (1 / 3.6, "kilometre per hour", ["kph", "kmh", "kilometers per hour"]),
        "mph": (0.44704, "mile per hour", ["mi/h", "miles per hour"]),
        "kn": (1852 / 3600, "knot", ["knot", "knots", "kt"]),
        "ft/s": (0.3048, "foot per second", ["fps", "feet per second"]),
    },
    "data": {
        "bit": (0.125, "bit", ["bits", "b"]),
        "B": (1.0, "byte", ["byte", "bytes"]),
        "kB": (1e3, "kilobyte (1000 bytes)", ["KB", "kilobyte", "kilobytes"]),
        "MB": (1e6, "megabyte (10^6 bytes)", ["megabyte", "megabytes"]),
        "GB": (1e9, "gigabyte (10^9 bytes)", ["gigabyte", "gigabytes"]),
        "TB": (1e12, "terabyte (10^12 bytes)", ["terabyte", "terabytes"]),
        "KiB": (1024.0, "kibibyte (1024 bytes)", ["kibibyte", "kibibytes"]),
        "MiB": (1024.0**2, "mebibyte (2^20 bytes)", ["mebibyte", "mebibytes"]),
        "GiB": (1024.0**3, "gibibyte (2^30 bytes)", ["gibibyte", "gibibytes"]),
        "TiB": (1024.0**4, "tebibyte (2^40 bytes)", ["tebibyte", "tebibytes"]),
    },
    "energy": {
        "J": (1.0, "joule", ["joule", "joules"]),
        "kJ": (1e3, "kilojoule", ["kilojoule", "kilojoules"]),
        "cal": (4.184, "thermochemical calorie", ["calorie", "calories"]),
        "kcal": (4184.0, "kilocalorie (food Calorie)", ["Cal", "kilocalorie", "kilocalories"]),
        "Wh": (3600.0, "watt-hour", ["watt hour", "watt hours"]),
        "kWh": (3.6e6, "kilowatt-hour", ["kilowatt hour", "kilowatt hours"]),
        "BTU": (1055.05585262, "British thermal unit (IT)", ["btu"]),
        "eV": (1.602176634e-19, "electronvolt", ["electronvolt", "electronvolts"]),
    },
    "pressure": {
        "Pa": (1.0, "pascal", ["pascal", "pascals"]),
        "hPa": (100.0, "hectopascal", ["hectopascal", "mbar", "millibar"]),
        "kPa": (1e3, "kilopascal", ["kilopascal", "kilopascals"]),
        "bar": (1e5, "bar", ["bars"]),
        "atm": (101325.0, "standard atmosphere", ["atmosphere", "atmospheres"]),
        "psi": (6894.757293168, "pound per square inch", ["lbf/in2"]),
        "mmHg": (133.322387415, "millimetre of mercury", ["torr", "Torr"]),
    },
    "temperature": {
        "C": (None, "degree Celsius", ["°C", "celsius", "degC"]),
        "F": (None, "degree Fahrenheit", ["°F", "fahrenheit", "degF"]),
        "K": (None, "kelvin", ["kelvin", "kelvins"]),
        "R": (None, "degree Rankine", ["°R", "rankine"]),
    },
}

# Every accepted spelling -> (dimension, canonical unit). Exact spellings first,
# then case-insensitive ones where they are not ambiguous (mB vs MB is).
_EXACT = {}
_FOLDED = {}
for _dimension, _units in UNITS.items():
    for _unit, (_factor, _name, _aliases) in _units.items():
        for _spelling in [_unit, _name, *_aliases]:
            _EXACT.setdefault(_spelling, (_dimension, _unit))
            _FOLDED.setdefault(_spelling.lower(), set()).add((_dimension, _unit))

# How a unit is written in the `text` of a result, where it differs from its symbol.
_SHOWN = {"C": "°C", "F": "°F", "R": "°R"}

# Kelvin offsets of the temperature scales: kelvin = (value + offset) * scale.
_TEMPERATURE = {"C": (273.15, 1.0), "F": (459.67, 5 / 9), "K": (0.0, 1.0), "R": (0.0, 5 / 9)}


class ArgumentError(Exception):
    """The arguments are wrong; the message says how to fix them."""


class ToolFailure(Exception):
    """The arguments were fine but the tool could not do its job."""


def resolve(spelling, role):
    found = _EXACT.get(spelling.strip())
    if found:
        return found
    candidates = _FOLDED.get(spelling.strip().lower(), set())
    if len(candidates) == 1:
        return next(iter(candidates))
    if len(candidates) > 1:
        choices = ", ".join(f"`{unit}` ({UNITS[dim][unit][1]})" for dim, unit in sorted(candidates))
        raise ArgumentError(f"`{role}` unit `{spelling}` is ambiguous: write one of {choices}")
    close = difflib.get_close_matches(spelling, list(_EXACT), n=5, cutoff=0.6)
    units = list(dict.fromkeys(_EXACT[spelling][1] for spelling in close))[:3]
    hint = f"; did you mean {' or '.join(f'`{unit}`' for unit in units)}?" if units else ""
    raise ArgumentError(f"unknown `{role}` unit `{spelling}`{hint} (call list_units to see every unit)")


def convert(value, source, target):
    (dimension, source_unit) = resolve(source, "from")
    (target_dimension, target_unit) = resolve(target, "to")
    if dimension != target_dimension:
        raise ArgumentError(
            f"cannot convert {dimension} (`{source_unit}`) to {target_dimension} (`{target_unit}`): "
            "both units must measure the same thing"
        )
    if dimension == "temperature":
        offset, scale = _TEMPERATURE[source_unit]
        kelvin = (value + offset) * scale
        if kelvin < 0:
            raise ArgumentError(f"{value:g} {source_unit} is below absolute zero")
        offset, scale = _TEMPERATURE[target_unit]
        result = kelvin / scale - offset
    else:
        result = value * UNITS[dimension][source_unit][0] / UNITS[dimension][target_unit][0]
    if not math.isfinite(result):
        raise ToolFailure(
            f"{value} {source_unit} in {target_unit} is too large for 64-bit floating point (over about 1.8e308)"
        )
    return dimension, source_unit, target_unit, result


def convert_units(args):
    value = args["value"]
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ArgumentError("`value` must be a finite number")
    digits = args.get("significant_digits", 12)
    if not isinstance(digits, int) or not 1 <= digits <= 17:
        raise ArgumentError("`significant_digits` must be a whole number from 1 to 17")
    dimension, source, target, result = convert(float(value), args["from"], args["to"])
    rounded = float(f"{result:.{digits}g}")
    log.log(log.Level.DEBUG, "converted", [log.Field("from", source), log.Field("to", target)])
    return {
        "value": value,
        "from": source,
        "to": target,
        "dimension": dimension,
        "result": rounded,
        "text": f"{value:g} {_SHOWN.get(source, source)} = {rounded:.{digits}g} {_SHOWN.get(target, target)}",
    }


def list_units(args):
    wanted = args.get("dimension")
    if wanted is not None and wanted not in UNITS:
        raise ArgumentError(f"unknown dimension `{wanted}`; choose one of {', '.join(UNITS)}")
    return {
        dimension: {unit: {"name": name, "also": aliases} for unit, (_, name, aliases) in units.items()}
        for dimension, units in UNITS.items()
        if wanted in (None, dimension)
    }


TOOLS = {
    "convert_units": (
        convert_units,
        "Converts a value between units of length, area, volume, mass, time, speed, data size, "
        "energy, pressure and temperature, with exact conversion factors (US customary for "
        "cups, pints, gallons; `imp_gal` for imperial). Units are symbols or names such as km, "
        "mile, ft, kg, lb, °F, kelvin, MiB, kWh, psi. Returns JSON {\"value\", \"from\", \"to\", "
        "\"dimension\", \"result\", \"text\"}. Example: {\"value\": 5, \"from\": \"km\", \"to\": "
        "\"mi\"} gives result 3.10685596119 and text \"5 km = 3.10685596119 mi\".",
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["value", "from", "to"],
            "properties": {
                "value": {"type": "number", "description": "The amount to convert."},
                "from": {"type": "string", "description": "The unit of `value`, e.g. \"km\", \"°F\", \"lb\"."},
                "to": {"type": "string", "description": "The unit to convert to; it must measure the same thing."},
                "significant_digits": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 17,
                    "description": "Significant digits of the result (default 12).",
                },
            },
        },
    ),
    "list_units": (
        list_units,
        "Lists the units convert_units knows, by dimension, each with its name and other accepted "
        "spellings. Returns JSON {dimension: {unit: {\"name\", \"also\"}}}.",
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "dimension": {
                    "type": "string",
                    "enum": list(UNITS),
                    "description": "Only this dimension. Optional.",
                }
            },
        },
    ),
}


class Tools(exports.Tools):
    def list_tools(self):
        return [
            types.Tool(name=name, description=description, input_schema=json.dumps(schema))
            for name, (_, description, schema) in TOOLS.items()
        ]

    def call_tool(self, name, arguments):
        tool = TOOLS.get(name)
        if tool is None:
            raise Err(types.CallError_Failed(f"this plugin has no tool named `{name}`"))
        try:
            args = json.loads(arguments)
            if not isinstance(args, dict):
                raise ArgumentError("the arguments must be a JSON object")
            result = tool[0](args)
        except (ArgumentError, KeyError, ValueError) as err:
            message = f"`{err.args[0]}` is missing" if isinstance(err, KeyError) else str(err)
            raise Err(types.CallError_InvalidArguments(message))
        except ToolFailure as err:
            raise Err(types.CallError_Failed(str(err)))
        return types.ToolOutput_Json(json.dumps(result))
