// expect: 4:3 goto
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  goto end;
  B[0] = A[0];
  end: B[1] = A[1];
}
