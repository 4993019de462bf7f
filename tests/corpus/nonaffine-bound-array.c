// expect: 4:23 non-affine
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < A[0]; i++)
    B[i] = A[i];
}
