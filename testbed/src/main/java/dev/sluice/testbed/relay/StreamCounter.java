package dev.sluice.testbed.relay;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ByteProcessor;
import java.net.URI;

/**
 * One streamed request's client: sends the request when connected, then counts the SSE events of
 * the answer in the raw bytes (each ends with a blank line, {@code \n\n}; HTTP chunk framing uses
 * {@code \r\n} and never adds one), without decoding HTTP or JSON, so that the reader costs little
 * CPU next to what it measures. Fields are written by the channel's event loop and read by the
 * reporting thread.
 */
final class StreamCounter extends ChannelInboundHandlerAdapter implements ByteProcessor {
    private final URI target;
    private final long maxTokens;
    private final StringBuilder statusLine = new StringBuilder(16);
    private int headEnd; // bytes of "\r\n\r\n" matched
    private boolean inBody;
    private byte prev;
    private long localEvents;
    volatile long events;
    volatile long bytes;
    /** 0 until the status line is read. */
    volatile int status;
    volatile boolean closed;

    StreamCounter(URI target, long maxTokens) {
        this.target = target;
        this.maxTokens = maxTokens;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        ctx.writeAndFlush(ChatWire.request(target, maxTokens));
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf b = (ByteBuf) msg;
        try {
            bytes += b.readableBytes();
            localEvents = 0;
            b.forEachByte(this);
            if (localEvents > 0) {
                events += localEvents;
            }
        } finally {
            b.release();
        }
    }

    @Override
    public boolean process(byte value) {
        if (!inBody) {
            if (status == 0) {
                if (value == '\r' || value == '\n') {
                    String s = statusLine.toString();
                    status = s.startsWith("HTTP/1.1 ") && s.length() >= 12 ? Integer.parseInt(s.substring(9, 12)) : -1;
                } else if (statusLine.length() < 64) {
                    statusLine.append((char) value);
                }
            }
            headEnd = (value == '\r' || value == '\n') && (headEnd % 2 == 0) == (value == '\r') ? headEnd + 1
                    : value == '\r' ? 1 : 0;
            if (headEnd == 4) {
                inBody = true;
                prev = 0;
            }
            return true;
        }
        if (value == '\n' && prev == '\n') {
            localEvents++;
            prev = 0;
            return true;
        }
        prev = value;
        return true;
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        closed = true;
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }

    String describeStatus() {
        return status == 0 ? "no answer" : status + " (" + statusLine.toString().replace('\n', ' ').trim() + ")";
    }
}
