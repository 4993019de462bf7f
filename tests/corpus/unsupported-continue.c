// expect: 5:16 continue
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++) {
    if (i > 3) continue;
    B[i] = A[i];
  }
}
