/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wire.h - SMB transport and SMB2 wire facts: offsets, codes, readers
 *
 * Everything here is from MS-SMB2 and RFC 1002. SMB2 fields are
 * little-endian; only the 4-byte transport prefix is big-endian. All
 * offsets of header fields count from the start of the SMB2 header, as
 * DataOffset does.
 */
#ifndef SMBSPLICE_WIRE_H
#define SMBSPLICE_WIRE_H

#include <stdint.h>

/* Transport: Direct TCP is 0x00 + 24-bit length; NetBIOS session service
 * (port 139) uses byte 0 as a type and bit 0 of byte 1 as length bit 16. */
#define NBT_MESSAGE	      0x00
#define NBT_SESSION_REQUEST   0x81
#define NBT_POSITIVE_RESPONSE 0x82
#define NBT_NEGATIVE_RESPONSE 0x83
#define NBT_RETARGET	      0x84
#define NBT_KEEPALIVE	      0x85
#define SMB_PREFIX_LEN	      4

/* The NetBIOS session service port: clients that dial it open with a
 * session request; on 445 they open with an SMB NEGOTIATE. */
#define NBT_SESSION_PORT 139

/* First-level encoded NetBIOS names (RFC 1002 4.1) are 32 bytes long: a
 * session request's called name opens with that length byte. */
#define NBT_ENCODED_NAME_LEN 0x20

/* Protocol identifiers: the first four bytes of a frame's body. */
#define SMB2_MAGIC	    0x424d53feu /* FE 'S' 'M' 'B', read little-endian */
#define SMB1_MAGIC	    0x424d53ffu /* FF 'S' 'M' 'B' */
#define SMB_TRANSFORM_MAGIC 0x424d53fdu /* FD 'S' 'M' 'B': encrypted */
#define SMB_COMPRESS_MAGIC  0x424d53fcu /* FC 'S' 'M' 'B': compressed */

#define SMB2_TRANSFORM_HDR_LEN 52
/* The session whose keys seal a transform frame (MS-SMB2 2.2.41). */
#define SMB2_TRANSFORM_SESSION_ID 44 /* u64 */
#define SMB2_COMPRESS_HDR_LEN	  8  /* the chained form's; unchained is 16 */

/* SMB2 header (64 bytes). */
#define SMB2_HDR_LEN	     64
#define SMB1_HDR_LEN	     32
#define SMB2_HDR_STRUCT_SIZE 4	/* u16, always 64 */
#define SMB2_HDR_STATUS	     8	/* u32 */
#define SMB2_HDR_COMMAND     12 /* u16 */
#define SMB2_HDR_FLAGS	     16 /* u32 */
#define SMB2_HDR_NEXT	     20 /* u32 NextCommand */
#define SMB2_HDR_MESSAGE_ID  24 /* u64 */
#define SMB2_HDR_ASYNC_ID    32 /* u64, with SMB2_FLAG_ASYNC */
#define SMB2_HDR_TREE_ID     36 /* u32, without SMB2_FLAG_ASYNC */
#define SMB2_HDR_SESSION_ID  40 /* u64 */

#define SMB2_FLAG_RESPONSE 0x1u
#define SMB2_FLAG_ASYNC	   0x2u
#define SMB2_FLAG_RELATED  0x4u
#define SMB2_FLAG_SIGNED   0x8u

#define SMB2_STATUS_SUCCESS	    0x00000000u
#define SMB2_STATUS_PENDING	    0x00000103u
#define SMB2_STATUS_BUFFER_OVERFLOW 0x80000005u

enum smb2_command {
	SMB2_NEGOTIATE,
	SMB2_SESSION_SETUP,
	SMB2_LOGOFF,
	SMB2_TREE_CONNECT,
	SMB2_TREE_DISCONNECT,
	SMB2_CREATE,
	SMB2_CLOSE,
	SMB2_FLUSH,
	SMB2_READ,
	SMB2_WRITE,
	SMB2_LOCK,
	SMB2_IOCTL,
	SMB2_CANCEL,
	SMB2_ECHO,
	SMB2_QUERY_DIRECTORY,
	SMB2_CHANGE_NOTIFY,
	SMB2_QUERY_INFO,
	SMB2_SET_INFO,
	SMB2_OPLOCK_BREAK,
	SMB2_NCOMMANDS
};

/* SMB1 header (MS-CIFS 2.2.3.1): 32 bytes, the protocol id's four
 * included; offsets count from the protocol id. Status is an NT status,
 * or DOS error fields that are all zero on success too. */
#define SMB1_HDR_LEN		    32
#define SMB1_HDR_COMMAND	    4 /* u8 */
#define SMB1_HDR_STATUS		    5 /* u32 */
#define SMB1_HDR_FLAGS		    9 /* u8 */
#define SMB1_HDR_PARSED		    10
#define SMB1_FLAGS_REPLY	    0x80u
#define SMB1_COM_NEGOTIATE	    0x72
#define SMB1_COM_SESSION_SETUP_ANDX 0x73
/* SESSION_SETUP_ANDX response (MS-CIFS 2.2.4.53.2, MS-SMB 2.2.4.6.2):
 * WordCount, the AndX block's four bytes, then Action, whose bit 0 says
 * the server logged the client in as guest. */
#define SMB1_SS_RSP_WORDCOUNT SMB1_HDR_LEN	 /* u8 */
#define SMB1_SS_RSP_ACTION    (SMB1_HDR_LEN + 5) /* u16 */
#define SMB1_SS_RSP_PARSED    (SMB1_SS_RSP_ACTION + 2)
#define SMB1_SS_RSP_MIN_WORDS 3
#define SMB1_ACTION_GUEST     0x0001u
/* The shortest SMB1 request: the header, WordCount (u8), ByteCount (u16). */
#define SMB1_MIN_REQ (SMB1_HDR_LEN + 3)

/* Body offsets, from the start of the SMB2 header. */
#define SMB2_NEG_REQ_BODY_SIZE	   36
#define SMB2_BODY		   SMB2_HDR_LEN
#define SMB2_ERROR_BODY_SIZE	   9
#define SMB2_READ_RSP_BODY_SIZE	   17
#define SMB2_READ_RSP_DATA_OFFSET  (SMB2_BODY + 2) /* u8 */
#define SMB2_READ_RSP_DATA_LENGTH  (SMB2_BODY + 4) /* u32 */
#define SMB2_READ_RSP_DATA	   (SMB2_BODY + 16)
#define SMB2_WRITE_REQ_BODY_SIZE   49
#define SMB2_WRITE_REQ_DATA_OFFSET (SMB2_BODY + 2) /* u16 */
#define SMB2_WRITE_REQ_LENGTH	   (SMB2_BODY + 4) /* u32 */
#define SMB2_WRITE_REQ_DATA	   (SMB2_BODY + 48)
#define SMB2_NEG_RSP_BODY_SIZE	   65
#define SMB2_NEG_RSP_DIALECT	   (SMB2_BODY + 4)    /* u16 */
#define SMB2_NEG_RSP_MAX_TRANSACT  (SMB2_BODY + 0x1c) /* u32 */
#define SMB2_NEG_RSP_MAX_READ	   (SMB2_BODY + 0x20) /* u32 */
#define SMB2_NEG_RSP_MAX_WRITE	   (SMB2_BODY + 0x24) /* u32 */
#define SMB2_NEG_RSP_CAPABILITIES  (SMB2_BODY + 0x18) /* u32 */
#define SMB2_NEG_RSP_PARSED	   (SMB2_BODY + 0x28)
/* SESSION_SETUP response SessionFlags (MS-SMB2 2.2.6): a guest or an
 * anonymous (null) session has not authenticated anyone. */
#define SMB2_SESS_RSP_FLAGS	   (SMB2_BODY + 2) /* u16 */
#define SMB2_SESS_RSP_PARSED	   (SMB2_SESS_RSP_FLAGS + 2)
#define SMB2_SESSION_FLAG_IS_GUEST 0x0001u
#define SMB2_SESSION_FLAG_IS_NULL  0x0002u
/* From 3.1.1 on, the final SESSION_SETUP response of a session with a key
 * (not guest, not anonymous) is always signed (MS-SMB2 3.3.5.5.3). */
#define SMB2_DIALECT_311	 0x0311u
#define SMB2_IOCTL_RSP_BODY_SIZE 49
#define SMB2_IOCTL_RSP_CTL_CODE	 (SMB2_BODY + 4) /* u32 */
#define SMB2_IOCTL_RSP_PARSED	 (SMB2_IOCTL_RSP_CTL_CODE + 4)
/* Where an IOCTL's fixed fields end and its buffers (a named pipe's RPC,
 * for one) begin. */
#define SMB2_IOCTL_REQ_FIXED (SMB2_BODY + 56)
#define SMB2_IOCTL_RSP_FIXED (SMB2_BODY + 48)

/* SESSION_SETUP request (MS-SMB2 2.2.5): where its security buffer lies.
 * Samba refuses one whose buffer does not follow the fixed body at once
 * (SMB2_SESS_REQ_FIXED, 88). The framer reads the buffer's first
 * SMB2_SESS_REQ_WINDOW bytes, enough for an NTLMSSP AUTHENTICATE's fixed
 * fields behind the SPNEGO header any client sends, and forgets them
 * once read. */
#define SMB2_SESS_REQ_BODY_SIZE	 25
#define SMB2_SESS_REQ_SEC_OFFSET (SMB2_BODY + 12) /* u16 */
#define SMB2_SESS_REQ_SEC_LENGTH (SMB2_BODY + 14) /* u16 */
#define SMB2_SESS_REQ_FIXED	 (SMB2_BODY + 24)
#define SMB2_SESS_REQ_WINDOW	 96
#define SMB2_SESS_REQ_PARSED	 (SMB2_SESS_REQ_FIXED + SMB2_SESS_REQ_WINDOW)

/* TREE_CONNECT request (MS-SMB2 2.2.9): the share's path, UTF-16LE,
 * "\\server\share". With EXTENSION_PRESENT, PathOffset counts from an
 * extension instead: that path is not read. */
#define SMB2_TREE_REQ_BODY_SIZE	  9
#define SMB2_TREE_REQ_FLAGS	  (SMB2_BODY + 2) /* u16 */
#define SMB2_TREE_REQ_PATH_OFFSET (SMB2_BODY + 4) /* u16 */
#define SMB2_TREE_REQ_PATH_LENGTH (SMB2_BODY + 6) /* u16 */
#define SMB2_TREE_REQ_PARSED	  (SMB2_BODY + 8)
#define SMB2_TREE_FLAG_EXTENSION  0x0004u

/* A server that offers multichannel, and the IOCTL by which a client asks
 * it for its network interfaces (MS-SMB2 2.2.3.1, 3.3.5.15.11). */
#define SMB2_GLOBAL_CAP_MULTI_CHANNEL	   0x00000008u
#define FSCTL_QUERY_NETWORK_INTERFACE_INFO 0x001401fcu

/* SPNEGO (RFC 4178 4.2): the client's later legs are a negTokenResp,
 * [1] then a SEQUENCE of [0] negState, [1] supportedMech, [2]
 * responseToken (an OCTET STRING), [3] mechListMIC, in that order
 * under DER. */
#define SPNEGO_NEG_TOKEN_INIT 0xa0 /* [0]; mechTypes in it are [0] too */
#define SPNEGO_NEG_TOKEN_RESP 0xa1
#define SPNEGO_RESPONSE_TOKEN 0xa2
#define DER_SEQUENCE	      0x30
#define DER_OCTET_STRING      0x04
#define DER_OBJECT_ID	      0x06
#define DER_LEN_LONG	      0x80 /* a long-form length: 0x80 | bytes */
#define DER_LEN_MAX_BYTES     4

/* NTLMSSP AUTHENTICATE_MESSAGE (MS-NLMP 2.2.1.3): offsets from its
 * signature. Each of its variable fields is a Len (u16), MaxLen and
 * Offset; only the lengths are read, never what they point at. */
#define NTLMSSP_SIGNATURE     "NTLMSSP" /* and its NUL: 8 bytes */
#define NTLMSSP_SIGNATURE_LEN 8
#define NTLMSSP_MESSAGE_TYPE  8 /* u32 */
#define NTLMSSP_AUTHENTICATE  3u
#define NTLMSSP_AUTH_LM_LEN   12 /* u16 LmChallengeResponseLen */
#define NTLMSSP_AUTH_NT_LEN   20 /* u16 NtChallengeResponseLen */
#define NTLMSSP_AUTH_USER_LEN 36 /* u16 UserNameLen */
#define NTLMSSP_AUTH_PARSED   (NTLMSSP_AUTH_USER_LEN + 2)
/* Where the names lie, for the connection's view (smb/who.c): each an
 * offset (u32) from the signature, after its Len and MaxLen. */
#define NTLMSSP_AUTH_DOMAIN_LEN	  28 /* u16 DomainNameLen */
#define NTLMSSP_AUTH_DOMAIN_OFF	  32 /* u32 DomainNameBufferOffset */
#define NTLMSSP_AUTH_USER_OFF	  40 /* u32 UserNameBufferOffset */
#define NTLMSSP_AUTH_NAMES	  44
#define NTLMSSP_AUTH_FLAGS	  60 /* u32 NegotiateFlags */
#define NTLMSSP_NEGOTIATE_UNICODE 0x00000001u

/* A GSS-API InitialContextToken (RFC 2743 3.1), which opens a client's
 * first SPNEGO leg or a bare Kerberos one; and the Kerberos mechanisms'
 * OIDs as DER writes them, the standard one (1.2.840.113554.1.2.2) and
 * Microsoft's (1.2.840.48018.1.2.2). */
#define GSS_INITIAL_CONTEXT 0x60
#define KRB5_OID_DER	    "\x06\x09\x2a\x86\x48\x86\xf7\x12\x01\x02\x02"
#define KRB5_MS_OID_DER	    "\x06\x09\x2a\x86\x48\x82\xf7\x12\x01\x02\x02"
#define KRB5_OID_DER_LEN    11
/* An anonymous client (MS-NLMP 3.2.5.1.2) sends no user name, no NT
 * response, and an LM response of Z(1) or none. The user name is not
 * looked at: Samba takes a name of NUL characters as empty, and no
 * credential goes without an NT response. */
#define NTLMSSP_ANON_LM_MAX 1
/* What may follow a negTokenResp's responseToken: a mechListMIC ([3], an
 * OCTET STRING of NTLMSSP's 16-byte signature, with their headers). More
 * than this can be a second responseToken, of which Samba takes the
 * last. */
#define SPNEGO_AFTER_TOKEN_MAX 32

static inline uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

#endif /* SMBSPLICE_WIRE_H */
