// Ed25519 signing of snapshots (contract section 8): key pairs, key files, and the signature over the 32 bytes
// of a snapshot's content hash. Keys are written as PEM (PKCS#8 private, SPKI public); reading also takes the
// base64 of the raw 32-byte key or of its DER form, so a key can be passed around as one line.

import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import { chmodSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { AppError } from "../../domain/errors";

export const SIGNATURE_ALGORITHM = "ed25519";

// DER prefixes of an Ed25519 key: SPKI (public) and PKCS#8 (private), each followed by the 32 raw bytes.
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

export interface KeyPairPem {
  privateKeyPem: string;
  publicKeyPem: string;
  /** The public key's id (see keyIdOf). */
  keyId: string;
}

export function generateKeyPair(): KeyPairPem {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  return {
    privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    keyId: keyIdOf(publicKey),
  };
}

/** Writes PREFIX.key (mode 0600) and PREFIX.pub; refuses to overwrite either, and then leaves neither behind. */
export function writeKeyPair(prefix: string, pair: KeyPairPem = generateKeyPair()): { privatePath: string; publicPath: string; keyId: string } {
  const privatePath = `${prefix}.key`;
  const publicPath = `${prefix}.pub`;
  let wrotePrivate = false;
  try {
    writeFileSync(privatePath, pair.privateKeyPem, { mode: 0o600, flag: "wx" });
    wrotePrivate = true;
    chmodSync(privatePath, 0o600);
    writeFileSync(publicPath, pair.publicKeyPem, { mode: 0o644, flag: "wx" });
  } catch (error) {
    // A private key without its public half would only make the next try with this prefix fail.
    if (wrotePrivate) rmSync(privatePath, { force: true });
    if ((error as NodeJS.ErrnoException).code === "EEXIST") {
      throw new AppError("conflict", `${(error as NodeJS.ErrnoException).path ?? prefix} already exists; choose another --out prefix`);
    }
    throw error;
  }
  return { privatePath, publicPath, keyId: pair.keyId };
}

/** First 16 hex digits of the SHA-256 of the raw 32-byte public key: names a key in `snapshot info`. */
export function keyIdOf(publicKey: KeyObject): string {
  const der = publicKey.export({ type: "spki", format: "der" });
  return createHash("sha256").update(der.subarray(der.length - 32)).digest("hex").slice(0, 16);
}

function keyText(source: string, what: string): string {
  try {
    return readFileSync(source, "utf8").trim();
  } catch (error) {
    throw new AppError("bad_request", `cannot read the ${what} ${source}: ${(error as Error).message}`);
  }
}

/** A private key from a file: PEM (PKCS#8), or base64 of the 32-byte seed or of the PKCS#8 DER. */
export function readPrivateKey(path: string): KeyObject {
  const text = keyText(path, "signing key");
  try {
    if (text.includes("-----BEGIN")) {
      const key = createPrivateKey(text);
      if (key.asymmetricKeyType !== "ed25519") throw new Error(`a ${key.asymmetricKeyType} key, not Ed25519`);
      return key;
    }
    const der = Buffer.from(text, "base64");
    if (der.length === 32) return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, der]), format: "der", type: "pkcs8" });
    return createPrivateKey({ key: der, format: "der", type: "pkcs8" });
  } catch (error) {
    throw new AppError("bad_request", `${path} is not an Ed25519 private key (PEM, or base64 of the key): ${(error as Error).message}`);
  }
}

/** A public key from a file: PEM (SPKI), or base64 of the 32 raw bytes or of the SPKI DER. */
export function readPublicKey(path: string): KeyObject {
  const text = keyText(path, "public key");
  try {
    if (text.includes("-----BEGIN")) {
      // A private key file also yields its public key; accept it rather than confuse the operator.
      const key = createPublicKey(text);
      if (key.asymmetricKeyType !== "ed25519") throw new Error(`a ${key.asymmetricKeyType} key, not Ed25519`);
      return key;
    }
    const der = Buffer.from(text, "base64");
    if (der.length === 32) return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, der]), format: "der", type: "spki" });
    return createPublicKey({ key: der, format: "der", type: "spki" });
  } catch (error) {
    throw new AppError("bad_request", `${path} is not an Ed25519 public key (PEM, or base64 of the key): ${(error as Error).message}`);
  }
}

export function publicKeyOf(privateKey: KeyObject): KeyObject {
  return createPublicKey(privateKey);
}

/** Base64 signature over the hash's 32 bytes. */
export function signHash(hashHex: string, privateKey: KeyObject): string {
  return sign(null, Buffer.from(hashHex, "hex"), privateKey).toString("base64");
}

export function verifyHashSignature(hashHex: string, signatureBase64: string, publicKey: KeyObject): boolean {
  const signature = Buffer.from(signatureBase64, "base64");
  if (signature.length !== 64) return false;
  try {
    return verify(null, Buffer.from(hashHex, "hex"), publicKey, signature);
  } catch {
    return false;
  }
}
