package dev.sluice.gateway.server;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.CombinedChannelDuplexHandler;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.ArrayDeque;
import java.util.List;

/**
 * Netty's HTTP/1.1 server codec, made strict where Netty is lenient: a header line folded onto the
 * next one (obs-fold: a line starting with a space or tab) is not joined into the previous value
 * but fails the request, so {@link RequestGuard} answers 400 and closes. RFC 9112 5.2 allows either;
 * a gateway that must never forward what two parsers could read two ways refuses.
 *
 * <p>How: the decoder consumes a request's head in {@code decode} calls that emit no content; the
 * bytes each such call consumed are scanned (state carried across calls) for a line start followed
 * by SP or HTAB, up to the head's empty line. From the end of one message to the next head's
 * request, every consumed byte is head. The encoder side is Netty's, with HEAD requests' responses
 * sent without a body as HttpServerCodec does (a queue of request methods).
 */
final class StrictServerCodec extends CombinedChannelDuplexHandler<StrictServerCodec.Decoder, StrictServerCodec.Encoder> {
    private final ArrayDeque<HttpMethod> methods = new ArrayDeque<>();

    StrictServerCodec(HttpDecoderConfig config) {
        init(new Decoder(config, methods), new Encoder(methods));
    }

    static final class Decoder extends HttpRequestDecoder {
        private final ArrayDeque<HttpMethod> methods;
        private boolean inHead = true;       // between messages: consumed bytes are a head
        private boolean lineStart;           // the last scanned byte ended a line
        private boolean folded;              // this head had an obs-fold line

        Decoder(HttpDecoderConfig config, ArrayDeque<HttpMethod> methods) {
            super(config);
            this.methods = methods;
        }

        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) throws Exception {
            int from = in.readerIndex();
            int produced = out.size();
            super.decode(ctx, in, out);
            if (inHead) {
                scan(in, from, in.readerIndex());
            }
            for (int i = produced; i < out.size(); i++) {
                Object o = out.get(i);
                if (o instanceof HttpRequest req) {
                    methods.add(req.method());
                    if (folded && req.decoderResult().isSuccess()) {
                        req.setDecoderResult(DecoderResult.failure(new IllegalArgumentException(
                                "a header line starts with a space or tab (obs-fold)")));
                    }
                    inHead = false; // its body (if any) follows
                    folded = false;
                    lineStart = false;
                }
                if (o instanceof LastHttpContent) {
                    inHead = true; // the next bytes start the next request's head
                }
            }
        }

        private void scan(ByteBuf in, int from, int to) {
            for (int i = from; i < to && inHead; i++) {
                byte b = in.getByte(i);
                if (lineStart) {
                    if (b == ' ' || b == '\t') {
                        folded = true;
                    } else if (b == '\r' || b == '\n') {
                        // the empty line ending the head: what follows is body, not scanned
                        inHead = false;
                        lineStart = false;
                        return;
                    }
                }
                lineStart = b == '\n';
            }
        }
    }

    static final class Encoder extends HttpResponseEncoder {
        private final ArrayDeque<HttpMethod> methods;

        Encoder(ArrayDeque<HttpMethod> methods) {
            this.methods = methods;
        }

        @Override
        protected boolean isContentAlwaysEmpty(HttpResponse msg) {
            if (msg.status().codeClass() == HttpStatusClass.INFORMATIONAL) {
                return super.isContentAlwaysEmpty(msg); // 100 Continue answers no request yet
            }
            HttpMethod method = methods.poll();
            return HttpMethod.HEAD.equals(method) || super.isContentAlwaysEmpty(msg);
        }
    }
}
