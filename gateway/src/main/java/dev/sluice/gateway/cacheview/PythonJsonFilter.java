package dev.sluice.gateway.cacheview;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.Filter;
import java.util.Map;

/**
 * {@code tojson} as transformers defines it for chat templates: Python's
 * {@code json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)}
 * (transformers {@code utils/chat_template_utils.py}, {@code tojson}), not Jinja's HTML-escaping one
 * nor jinjava's compact Jackson one: {@code ", "} and {@code ": "} between items, non-ASCII kept.
 */
final class PythonJsonFilter implements Filter {
    @Override
    public String getName() {
        return "tojson";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
        return filter(var, interpreter, args, Map.of());
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
        Object indent = kwargs.containsKey("indent") ? kwargs.get("indent") : args.length > 0 ? args[0] : null;
        boolean sortKeys = Boolean.TRUE.equals(kwargs.get("sort_keys"));
        return PythonJson.dumps(var, indent == null ? -1 : ((Number) indent).intValue(), sortKeys);
    }
}
