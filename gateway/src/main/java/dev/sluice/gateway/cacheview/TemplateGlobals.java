package dev.sluice.gateway.cacheview;

import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.TextStyle;
import java.util.Locale;

/**
 * The functions transformers adds to a chat template's globals
 * (transformers {@code utils/chat_template_utils.py}, {@code _compile_jinja_template}):
 * {@code raise_exception(message)} and {@code strftime_now(format)}.
 */
public final class TemplateGlobals {
    private TemplateGlobals() {
    }

    /** HF's raise_exception: the template refuses these messages (the engines answer 400). */
    public static String raiseException(String message) {
        throw new ChatTemplate.TemplateFailure("raise_exception: " + message);
    }

    /** HF's strftime_now: local time now in Python's strftime format. */
    public static String strftimeNow(String format) {
        return strftime(LocalDateTime.now(), format);
    }

    static String strftime(LocalDateTime t, String format) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < format.length(); i++) {
            char c = format.charAt(i);
            if (c != '%' || i + 1 == format.length()) {
                b.append(c);
                continue;
            }
            char f = format.charAt(++i);
            switch (f) {
                case 'd' -> b.append(String.format("%02d", t.getDayOfMonth()));
                case 'm' -> b.append(String.format("%02d", t.getMonthValue()));
                case 'Y' -> b.append(t.getYear());
                case 'y' -> b.append(String.format("%02d", t.getYear() % 100));
                case 'H' -> b.append(String.format("%02d", t.getHour()));
                case 'M' -> b.append(String.format("%02d", t.getMinute()));
                case 'S' -> b.append(String.format("%02d", t.getSecond()));
                case 'b' -> b.append(t.getMonth().getDisplayName(TextStyle.SHORT, Locale.US));
                case 'B' -> b.append(t.getMonth().getDisplayName(TextStyle.FULL, Locale.US));
                case 'a' -> b.append(t.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.US));
                case 'A' -> b.append(t.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.US));
                case 'j' -> b.append(String.format("%03d", t.getDayOfYear()));
                case '%' -> b.append('%');
                default -> b.append(t.format(DateTimeFormatter.ISO_LOCAL_DATE_TIME)); // never guessed silently
            }
        }
        return b.toString();
    }
}
